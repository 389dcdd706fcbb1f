package refs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
)

func TestCreateReadUpdateDelete_R1(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	s := r.store()
	const ref = "refs/flume/counters/a"

	if _, err := s.Read(ctx, ref); !errors.Is(err, refs.ErrNotFound) {
		t.Fatalf("read before create: got %v, want ErrNotFound", err)
	}
	written, err := s.Write(ctx, []refs.Change{{Ref: ref, State: counter{Schema: 1, Kind: "counter", N: 1}, Message: "create a"}})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.Read(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Commit != written[0].Commit || rec.Kind != "counter" || rec.Schema != 1 {
		t.Fatalf("read %+v, wrote %+v", rec, written[0])
	}
	if _, err := s.Write(ctx, []refs.Change{{Ref: ref, Old: rec, State: counter{Schema: 1, Kind: "counter", N: 2}, Message: "to 2"}}); err != nil {
		t.Fatal(err)
	}
	// R1: the chain is the history; the tip's tree holds exactly state.json.
	if got := r.git("-C", r.dir, "log", "--format=%s", ref); got != "to 2\ncreate a" {
		t.Fatalf("history:\n%s", got)
	}
	if got := r.git("-C", r.dir, "ls-tree", "--name-only", ref); got != "state.json" {
		t.Fatalf("tree: %q", got)
	}
	if got := r.git("-C", r.dir, "log", "-1", "--format=%an <%ae>", ref); got != "git-flume <git-flume@localhost>" {
		t.Fatalf("author: %q", got)
	}
	// Writing again from the stale read is a conflict and changes nothing.
	before := r.git("-C", r.dir, "rev-parse", ref)
	_, err = s.Write(ctx, []refs.Change{{Ref: ref, Old: rec, State: counter{Schema: 1, Kind: "counter", N: 99}}})
	var conflict *refs.ConflictError
	if !errors.As(err, &conflict) || conflict.Conflicts[0].Expected != rec.Commit || conflict.Conflicts[0].Found != before {
		t.Fatalf("stale write: got %v, want conflict naming expected and found", err)
	}
	if after := r.git("-C", r.dir, "rev-parse", ref); after != before {
		t.Fatalf("stale write moved the ref")
	}
	cur, _ := s.Read(ctx, ref)
	if _, err := s.Write(ctx, []refs.Change{{Ref: ref, Old: cur, Delete: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, ref); !errors.Is(err, refs.ErrNotFound) {
		t.Fatalf("read after delete: %v", err)
	}
}

func TestCreateIsCompareAndSwap_R2(t *testing.T) {
	ctx := context.Background()
	s := newTestRepo(t).store()
	ch := refs.Change{Ref: "refs/flume/counters/c", State: counter{Schema: 1, Kind: "counter"}}
	if _, err := s.Write(ctx, []refs.Change{ch}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Write(ctx, []refs.Change{ch})
	var conflict *refs.ConflictError
	if !errors.As(err, &conflict) || conflict.Conflicts[0].Expected != "" {
		t.Fatalf("second create: got %v, want conflict expecting absent", err)
	}
}

func TestMultiRefTransactionAllOrNothing_R2(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	s := r.store()
	mk := func(name string, n int) *refs.Record {
		w, err := s.Write(ctx, []refs.Change{{Ref: name, State: counter{Schema: 1, Kind: "counter", N: n}}})
		if err != nil {
			t.Fatal(err)
		}
		return w[0]
	}
	a, b := mk("refs/flume/counters/a", 1), mk("refs/flume/counters/b", 1)
	// b moves behind our back: our read of b is now stale.
	if _, err := s.Write(ctx, []refs.Change{{Ref: b.Ref, Old: b, State: counter{Schema: 1, Kind: "counter", N: 2}}}); err != nil {
		t.Fatal(err)
	}
	beforeA, beforeB := r.git("-C", r.dir, "rev-parse", a.Ref), r.git("-C", r.dir, "rev-parse", b.Ref)
	_, err := s.Write(ctx, []refs.Change{
		{Ref: a.Ref, Old: a, State: counter{Schema: 1, Kind: "counter", N: 10}},
		{Ref: b.Ref, Old: b, State: counter{Schema: 1, Kind: "counter", N: 10}},
		{Ref: "refs/flume/counters/new", State: counter{Schema: 1, Kind: "counter"}},
	})
	var conflict *refs.ConflictError
	if !errors.As(err, &conflict) || len(conflict.Conflicts) != 1 || conflict.Conflicts[0].Name != b.Ref {
		t.Fatalf("got %v, want a conflict naming only %s", err, b.Ref)
	}
	if r.git("-C", r.dir, "rev-parse", a.Ref) != beforeA || r.git("-C", r.dir, "rev-parse", b.Ref) != beforeB {
		t.Fatal("a transaction with one stale ref moved another ref")
	}
	if _, err := s.Read(ctx, "refs/flume/counters/new"); !errors.Is(err, refs.ErrNotFound) {
		t.Fatalf("a refused transaction created a ref: %v", err)
	}
}

func TestNewerSchemaNeverOverwritten_R5(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	s := r.store()
	const ref = "refs/flume/places/fix--future"
	plant(r, ref, `{"schema":999,"kind":"place"}`)
	before := r.git("-C", r.dir, "rev-parse", ref)

	_, err := s.Read(ctx, ref)
	var newer *refs.NewerSchemaError
	if !errors.As(err, &newer) || newer.Ref != ref || newer.Schema != 999 {
		t.Fatalf("read: got %v, want NewerSchemaError naming %s", err, ref)
	}
	_, err = s.Edit(ctx, ref, func(cur *refs.Record) (refs.Change, error) {
		t.Fatal("decide called for a newer-schema record")
		return refs.Change{}, nil
	})
	if !errors.As(err, &newer) {
		t.Fatalf("edit: got %v, want NewerSchemaError", err)
	}
	// A blind create over it is a conflict, not an overwrite.
	_, err = s.Write(ctx, []refs.Change{{Ref: ref, State: map[string]any{"schema": 1, "kind": "place"}}})
	var conflict *refs.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("create over it: got %v, want conflict", err)
	}
	if after := r.git("-C", r.dir, "rev-parse", ref); after != before {
		t.Fatal("newer-schema record was overwritten")
	}
}

func TestListReportsProblemsAndReadsTheRest_R5(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	s := r.store()
	for i := range 5 {
		name := "refs/flume/counters/ok" + string(rune('a'+i))
		if _, err := s.Write(ctx, []refs.Change{{Ref: name, State: counter{Schema: 1, Kind: "counter", N: i}}}); err != nil {
			t.Fatal(err)
		}
	}
	plant(r, "refs/flume/counters/bad", `{not json`)
	plant(r, "refs/flume/counters/newer", `{"schema":2,"kind":"counter"}`)
	recs, problems, err := s.List(ctx, refs.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 || len(problems) != 2 {
		t.Fatalf("got %d records, %d problems; want 5 and 2", len(recs), len(problems))
	}
	for _, p := range problems {
		if !strings.Contains(p.Error(), p.Ref) {
			t.Errorf("problem %q does not name its ref %s", p.Error(), p.Ref)
		}
	}
}

func TestWriteRefusesUnreadableRecord(t *testing.T) {
	ctx := context.Background()
	s := newTestRepo(t).store()
	for _, state := range []any{
		map[string]any{"kind": "counter"},
		map[string]any{"schema": 1, "kind": "nosuch"},
		map[string]any{"schema": 2, "kind": "counter"},
		[]int{1},
	} {
		if _, err := s.Write(ctx, []refs.Change{{Ref: "refs/flume/counters/x", State: state}}); err == nil {
			t.Errorf("write of %v succeeded", state)
		}
	}
	if _, err := s.Write(ctx, []refs.Change{{Ref: "refs/heads/main", State: counter{Schema: 1, Kind: "counter"}}}); err == nil {
		t.Error("write outside refs/flume succeeded")
	}
}

func TestValidateName_R6(t *testing.T) {
	good := []string{"fix", "a", "0day", "my-change_2.1", strings.Repeat("a", 64)}
	bad := []string{"", "A", "A B", "../x", "a..b", "x.lock", "x.", "-x", ".x", "_x", "a/b", "a b", "é", strings.Repeat("a", 65), "a\nb"}
	for _, n := range good {
		if err := refs.ValidateName("name", n); err != nil {
			t.Errorf("%q refused: %v", n, err)
		}
	}
	for _, n := range bad {
		err := refs.ValidateName("name", n)
		var nameErr *refs.NameError
		if !errors.As(err, &nameErr) {
			t.Errorf("%q accepted", n)
		}
	}
}

// TestObjectsMatchGit checks that state objects built in process are the
// objects git itself builds: the CLI path and the in-process path agree.
func TestObjectsMatchGit(t *testing.T) {
	ctx := context.Background()
	r := newTestRepo(t)
	data := []byte(`{"schema":1,"kind":"counter","n":7}`)
	blob, err := r.repo.WriteBlob(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "state.json")
	os.WriteFile(file, data, 0o644)
	if want := r.git("-C", r.dir, "hash-object", file); blob != want {
		t.Fatalf("blob %s, git says %s", blob, want)
	}
	tree, err := r.repo.WriteTree(ctx, []git.TreeEntry{{Name: "state.json", ID: blob}})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.git("-C", r.dir, "ls-tree", tree); got != "100644 blob "+blob+"\tstate.json" {
		t.Fatalf("tree: %q", got)
	}
	r.git("-C", r.dir, "fsck", "--strict", "--no-dangling")
}

// plant stores content as a record at ref with raw git, bypassing the store.
func plant(r *testRepo, ref, content string) {
	r.t.Helper()
	file := filepath.Join(r.t.TempDir(), "state.json")
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
	blob := r.git("-C", r.dir, "hash-object", "-w", file)
	idx := filepath.Join(r.t.TempDir(), "index")
	r.env = append(r.env, "GIT_INDEX_FILE="+idx)
	r.git("-C", r.dir, "update-index", "--add", "--cacheinfo", "100644,"+blob+",state.json")
	tree := r.git("-C", r.dir, "write-tree")
	r.env = r.env[:len(r.env)-1]
	commit := r.git("-C", r.dir, "commit-tree", "-m", "planted", tree)
	r.git("-C", r.dir, "update-ref", ref, commit)
}

// TestSHA256Repository runs the store on a SHA-256 repository, where objects
// are built by the git CLI rather than in process (R2's fallback path).
func TestSHA256Repository(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	r := &testRepo{t: t, dir: filepath.Join(root, "repo"), env: hermeticEnv(root)}
	r.git("init", "-q", "--object-format=sha256", r.dir)
	repo, err := (&git.Runner{Env: r.env}).Open(ctx, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	if repo.ObjectFormat != "sha256" {
		t.Fatalf("object format %q", repo.ObjectFormat)
	}
	r.repo = repo
	s := r.store()
	const ref = "refs/flume/counters/s"
	for range 3 {
		if _, err := increment(ctx, s, ref, "t"); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := s.Read(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	var c counter
	rec.Decode(&c)
	if c.N != 3 || len(rec.Commit) != 64 {
		t.Fatalf("counter %d at %s", c.N, rec.Commit)
	}
	_, err = s.Write(ctx, []refs.Change{{Ref: ref, State: c}})
	var conflict *refs.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("create over existing: %v", err)
	}
	r.git("-C", r.dir, "fsck", "--strict", "--no-dangling")
}
