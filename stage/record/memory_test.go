package record

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/git-flume/git-flume/refs"
)

// TestPlaceRecordsInMemory_R2_R5: a place's typed reads and CAS edits run
// on a store in memory as on a repository's, no git started: the record
// flume writes is created, edited and read back; an edit that would make
// it lie in a field is refused and nothing moves (issue 43).
func TestPlaceRecordsInMemory_R2_R5(t *testing.T) {
	ctx := context.Background()
	store := refs.NewMemory(refs.Kinds{PlaceKind, refs.ClaimKind})
	var p Place
	if err := json.Unmarshal([]byte(fuzzSeed), &p); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Write(ctx, []refs.Change{PlaceChange(nil, &p, "launch "+p.ID)}); err != nil {
		t.Fatal(err)
	}
	if _, err := EditPlace(ctx, store, p.ID, func(cur *Place) (string, error) {
		cur.Brief = "edited in memory"
		return "edit " + cur.ID, nil
	}); err != nil {
		t.Fatal(err)
	}
	_, got, err := ReadPlace(ctx, store, p.ID)
	if err != nil || got.Brief != "edited in memory" {
		t.Fatalf("read back %q (%v), want the edit", got.Brief, err)
	}
	_, err = EditPlace(ctx, store, p.ID, func(cur *Place) (string, error) {
		cur.Current = -5
		return "lie", nil
	})
	var malformed *refs.MalformedError
	if !errors.As(err, &malformed) {
		t.Errorf("an edit to current -5: %v, want refused as malformed", err)
	}
	if _, got, _ = ReadPlace(ctx, store, p.ID); got.Current == -5 {
		t.Error("the refused edit moved the record")
	}
}
