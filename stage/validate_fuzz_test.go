package stage

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/git-flume/git-flume/refs"
)

const fuzzSeed = `{"schema":1,"kind":"place","id":"fix--one","placeKind":"fix","name":"one","repo":"/r","path":"/r/places/fix--one","branch":"fix/one","base":"1111111111111111111111111111111111111111","target":"main","brief":"b","host":"h","created":"2026-01-01T00:00:00Z","phase":"made","current":1,"stages":[{"name":"code","prompt":"code.md","deliverable":"commit","state":"delivered","runs":1,"agent":{"program":"claude","format":"claude","pattern":"","session":"s","pane":"p","host":"h","promptFile":"","started":"2026-01-01T00:00:00Z","sentAt":"2026-01-01T00:00:00Z","sends":1,"ended":true},"snapshots":[{"why":"end","ref":"refs/flume/snapshots/fix--one/1-code-1-end","commit":"2222222222222222222222222222222222222222","tree":"","head":"","diff":""}]},{"name":"submit","prompt":"submit.md","deliverable":"landed","state":"working","runs":0}]}`

// FuzzPlaceRecord: whatever bytes a record holds (a hostile remote's, a
// hand edit's), checking and then using it never panics; a record the
// check accepts can be shown by status and indexed by its current stage
// (issue 13: `current: -5` panicked status, rollback and advance).
func FuzzPlaceRecord(f *testing.F) {
	f.Add([]byte(fuzzSeed))
	f.Add([]byte(`{"schema":1,"kind":"place","current":-5,"stages":[]}`))
	f.Add([]byte(`{"schema":1,"kind":"place","current":99}`))
	f.Add([]byte(`{"schema":1,"kind":"place","stages":null}`))
	f.Add([]byte(`{"schema":"1","kind":7}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	store := refs.New(nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := store.Check("refs/flume/places/fix--one", data); err != nil {
			return
		}
		var p Place
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatalf("the check accepted a record that does not decode: %v", err)
		}
		if err := ValidatePlace("fix--one", &p); err != nil {
			t.Fatalf("the store accepted a place the validator refuses: %v", err)
		}
		_ = p.Stages[p.Current]
		ps := placeStatus(&p)
		currentRun(&p)
		WriteStatusTable(io.Discard, &Status{Schema: 1, Places: []PlaceStatus{ps}})
	})
}
