package refs_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/git-flume/git-flume/refs"
)

// TestMemoryStoreKeepsRecordsAsARepositoryDoes_R2_R5: a store in memory
// reads, lists, edits and deletes records as a repository's store does,
// refuses a kind it does not know, and loses a compare-and-swap against a
// record that moved, with nothing written: what a workflow's test needs
// of records, with no git (issue 43).
func TestMemoryStoreKeepsRecordsAsARepositoryDoes_R2_R5(t *testing.T) {
	ctx := context.Background()
	s := refs.NewMemory(testKinds)
	if s.Repo() != nil {
		t.Fatal("a memory store has a repository")
	}
	ref := refs.Prefix + "counters/a"
	first, err := s.Write(ctx, []refs.Change{{Ref: ref, State: counter{Schema: 1, Kind: "counter", Last: "one"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, []refs.Change{{Ref: ref, State: counter{Schema: 1, Kind: "counter", Last: "again"}}}); !isConflict(err) {
		t.Errorf("a second create of %s: %v, want a lost compare-and-swap", ref, err)
	}
	if _, err := s.Write(ctx, []refs.Change{{Ref: ref, Old: first[0], State: counter{Schema: 1, Kind: "counter", Last: "two"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, []refs.Change{{Ref: ref, Old: first[0], State: counter{Schema: 1, Kind: "counter", Last: "stale"}}}); !isConflict(err) {
		t.Errorf("a write from a stale read: %v, want a lost compare-and-swap", err)
	}
	rec, err := s.Read(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	var c counter
	if err := rec.Decode(&c); err != nil || c.Last != "two" {
		t.Errorf("read %+v (%v), want the second write", c, err)
	}
	if _, err := s.Write(ctx, []refs.Change{{Ref: refs.Prefix + "things/x", State: map[string]any{"schema": 1, "kind": "nosuch"}}}); err == nil {
		t.Error("a record of a kind the store was not given was written")
	}
	recs, problems, err := s.List(ctx, refs.Prefix)
	if err != nil || len(recs) != 1 || len(problems) != 0 {
		t.Errorf("List = %d records, %d problems, %v; want the one record", len(recs), len(problems), err)
	}
	if _, err := s.Write(ctx, []refs.Change{{Ref: ref, Old: rec, Delete: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, ref); !errors.Is(err, refs.ErrNotFound) {
		t.Errorf("read after delete: %v, want ErrNotFound", err)
	}
}

// TestMemoryStoreLosesNoUpdate_R3: 8 writers each add 50 to one counter
// through Edit's read–decide–write loop; every increment is kept.
func TestMemoryStoreLosesNoUpdate_R3(t *testing.T) {
	ctx := context.Background()
	s := refs.NewMemory(testKinds)
	ref := refs.Prefix + "counters/n"
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				_, err := s.Edit(ctx, ref, func(cur *refs.Record) (refs.Change, error) {
					n := 0
					if cur != nil {
						var c counter
						if err := cur.Decode(&c); err != nil {
							return refs.Change{}, err
						}
						n = c.N
					}
					return refs.Change{State: counter{Schema: 1, Kind: "counter", N: n + 1, Last: fmt.Sprintf("%d/%d", w, i)}}, nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rec, err := s.Read(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	var c counter
	if err := rec.Decode(&c); err != nil || c.N != 400 {
		t.Errorf("counter = %d (%v), want 400", c.N, err)
	}
}

func isConflict(err error) bool {
	var conflict *refs.ConflictError
	return errors.As(err, &conflict)
}
