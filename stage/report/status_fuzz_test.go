package report

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage/record"
)

// FuzzStatusShowsAnyCheckedRecord_R5: a record the store's check accepts,
// whatever its bytes, is shown by status (its view and its table) without a
// panic (`current: -5` panicked status).
func FuzzStatusShowsAnyCheckedRecord_R5(f *testing.F) {
	seed, err := os.ReadFile("../record/testdata/place-record.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"schema":1,"kind":"place","current":-5,"stages":[]}`))
	f.Add([]byte(`{"schema":1,"kind":"place","current":99}`))
	store := refs.New(nil, refs.Kinds{record.PlaceKind, refs.ClaimKind})
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := store.Check("refs/flume/places/fix--one", data); err != nil {
			return
		}
		var p record.Place
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatalf("the check accepted a record that does not decode: %v", err)
		}
		ps := placeStatus(&p, time.Now())
		WriteStatusTable(io.Discard, &Status{Schema: 1, Places: []PlaceStatus{ps}}, true, 0)
		var narrow bytes.Buffer
		WriteStatusTable(&narrow, &Status{Schema: 1, Places: []PlaceStatus{ps}}, false, 0)
		table, _, _ := strings.Cut(narrow.String(), "\n\n") // the readying's output follows
		for line := range strings.SplitSeq(strings.TrimRight(table, "\n"), "\n") {
			if term.Width(line) > TableColumns && !strings.HasPrefix(line, "problem: ") {
				t.Fatalf("a place's line is %d columns:\n%s", term.Width(line), line)
			}
		}
	})
}
