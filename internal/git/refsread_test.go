package git_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/git"
)

// noGit makes every git process of the runner fail, so that what still
// answers was read in process.
const noGit = "/nonexistent/git"

// refsFixture makes a repository whose refs/flume holds loose refs,
// packed refs, a packed ref shadowed by a newer loose one, a ref at a blob,
// nested folders and a writer's lock file, and returns it with the
// commits its refs name.
func refsFixture(t *testing.T) (dir string, env []string) {
	env = testEnv(t)
	dir = t.TempDir()
	mustGit(t, env, "init", "-q", dir)
	run := func(args ...string) string { return mustGit(t, env, append([]string{"-C", dir}, args...)...) }
	commit := func(state string) string {
		cmd := exec.Command("git", "-C", dir, "hash-object", "-w", "--stdin")
		cmd.Env, cmd.Stdin = env, strings.NewReader(state)
		blob, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		mk := exec.Command("git", "-C", dir, "mktree")
		mk.Env, mk.Stdin = env, strings.NewReader("100644 blob "+strings.TrimSpace(string(blob))+"\tstate.json\n")
		tree, err := mk.Output()
		if err != nil {
			t.Fatal(err)
		}
		return run("commit-tree", "-m", "state", strings.TrimSpace(string(tree)))
	}
	for i := range 6 {
		run("update-ref", fmt.Sprintf("refs/flume/places/fix--p%d", i), commit(fmt.Sprintf(`{"n":%d}`, i)))
	}
	run("update-ref", "refs/flume/claims/fix--p0", commit(`{"claim":0}`))
	run("update-ref", "refs/heads/main", commit(`{"not":"flume"}`))
	run("pack-refs", "--all")
	// Loose again, newer than what packed-refs says.
	run("update-ref", "refs/flume/places/fix--p1", commit(`{"n":"1 again"}`))
	run("update-ref", "refs/flume/places/fix--p9", commit(`{"n":9}`))
	blob := strings.TrimSpace(run("rev-parse", "refs/flume/places/fix--p2:state.json"))
	run("update-ref", "refs/flume/odd/blob", blob)
	if err := os.WriteFile(filepath.Join(dir, ".git", "refs", "flume", "places", "fix--p3.lock"), []byte(blob+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, env
}

func forEachRef(t *testing.T, env []string, dir string, patterns ...string) []git.Ref {
	cmd := exec.Command("git", append([]string{"-C", dir, "for-each-ref", "--format=%(objectname) %(objecttype) %(refname)"}, patterns...)...)
	cmd.Env = env
	out, err := cmd.Output() // a broken ref's warning is on stderr
	if err != nil {
		t.Fatal(err)
	}
	var refs []git.Ref
	for line := range strings.SplitSeq(string(out), "\n") {
		if f := strings.SplitN(line, " ", 3); len(f) == 3 {
			refs = append(refs, git.Ref{ID: f[0], Type: f[1], Name: f[2]})
		}
	}
	return refs
}

// TestRefsReadInProcessAgreeWithGit_R4: with no git to run, ListRefs and
// FilesAt answer what for-each-ref and cat-file answer, loose, packed and
// shadowed refs alike, for a folder pattern and for one whole ref.
func TestRefsReadInProcessAgreeWithGit_R4(t *testing.T) {
	ctx := context.Background()
	dir, env := refsFixture(t)
	r := &git.Runner{Env: env}
	repo := mustOpen(t, r, dir)
	r.Path = noGit
	for _, patterns := range [][]string{{"refs/flume/"}, {"refs/flume"}, {"refs/flume/places/fix--p1"}, {"refs/flume/places/fix--p", "refs/flume/claims/"}} {
		got, err := repo.ListRefs(ctx, patterns...)
		if err != nil {
			t.Fatalf("%q: %v (not read in process)", patterns, err)
		}
		want := forEachRef(t, env, dir, patterns...)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q:\n in process %v\n git        %v", patterns, got, want)
		}
	}
	refs, _ := repo.ListRefs(ctx, "refs/flume/places/")
	var ids []string
	for _, ref := range refs {
		ids = append(ids, ref.ID)
	}
	objs, err := repo.FilesAt(ctx, ids, "state.json")
	if err != nil {
		t.Fatalf("FilesAt: %v (not read in process)", err)
	}
	for i, ref := range refs {
		want := mustGit(t, env, "-C", dir, "cat-file", "blob", ref.Name+":state.json")
		if objs[i].Type != "blob" || string(objs[i].Data) != want {
			t.Errorf("%s: in process %s %q, git %q", ref.Name, objs[i].Type, objs[i].Data, want)
		}
	}
	if objs, err := repo.FilesAt(ctx, ids[:1], "absent.json"); err != nil || objs[0].Type != "" {
		t.Errorf("a file the tree lacks: %+v, %v", objs, err)
	}

	// One ref, one commit's tree and file, as the store's reads ask.
	for _, name := range []string{"refs/flume/places/fix--p0", "refs/flume/places/fix--p1", "refs/heads/main"} {
		want := mustGit(t, env, "-C", dir, "rev-parse", name)
		if got, err := repo.RefValue(ctx, name); err != nil || got != want {
			t.Errorf("RefValue %s = %q, %v; git %s", name, got, err, want)
		}
		if tree, err := repo.TreeOf(ctx, want); err != nil || tree != mustGit(t, env, "-C", dir, "rev-parse", name+"^{tree}") {
			t.Errorf("TreeOf %s = %q, %v", name, tree, err)
		}
		if blob, err := repo.BlobAt(ctx, want, "state.json"); err != nil || blob != mustGit(t, env, "-C", dir, "rev-parse", name+":state.json") {
			t.Errorf("BlobAt %s = %q, %v", name, blob, err)
		}
		rf, err := repo.ReadRefFile(ctx, name, "state.json")
		if err != nil || !rf.IsFile || string(rf.Data) != mustGit(t, env, "-C", dir, "cat-file", "blob", name+":state.json") {
			t.Errorf("ReadRefFile %s = %+v, %v", name, rf, err)
		}
	}
	if got, err := repo.RefValue(ctx, "refs/flume/places/absent"); err != nil || got != "" {
		t.Errorf("RefValue of an absent ref = %q, %v", got, err)
	}
	refValues := func(state string) {
		t.Helper()
		names := []string{"refs/flume/places/fix--p0", "refs/flume/places/fix--p1", "refs/heads/main", "refs/flume/places/absent"}
		got, err := repo.RefValues(ctx, names)
		if err != nil {
			t.Fatalf("RefValues (%s): %v (not read in process)", state, err)
		}
		for _, name := range names[:3] {
			if want := mustGit(t, env, "-C", dir, "rev-parse", name); got[name] != want {
				t.Errorf("RefValues (%s) %s = %q; git %s", state, name, got[name], want)
			}
		}
		if id, ok := got["refs/flume/places/absent"]; !ok || id != "" || len(got) != len(names) {
			t.Errorf("RefValues (%s): %v", state, got)
		}
	}
	refValues("loose")
	if _, err := repo.ReadRefFile(ctx, "refs/flume/places/absent", "state.json"); !errors.Is(err, git.ErrNotExist) {
		t.Errorf("ReadRefFile of an absent ref: %v", err)
	}
	if blob, err := repo.BlobAt(ctx, ids[0], "no/such/file"); err != nil || blob != "" {
		t.Errorf("BlobAt of a missing path = %q, %v", blob, err)
	}

	// The same after gc: every object and ref packed.
	mustGit(t, env, "-C", dir, "gc", "-q", "--prune=now")
	r = &git.Runner{Env: env}
	repo = mustOpen(t, r, dir)
	r.Path = noGit
	if objs, err := repo.FilesAt(ctx, ids, "state.json"); err != nil || string(objs[1].Data) != `{"n":"1 again"}` {
		t.Errorf("packed objects: %+v, %v", objs, err)
	}
	got, err := repo.ListRefs(ctx, "refs/flume/")
	if want := forEachRef(t, env, dir, "refs/flume/"); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("packed refs: %v, %v; git %v", got, err, want)
	}
	refValues("packed")
}

// TestRefsReadGoToGitForWhatIsNotPlain_R2: a symbolic ref and a glob
// pattern are git's to judge: with no git the read fails instead of
// answering on its own, and with git it answers as git does. (A broken
// loose ref is listed as broken: TestRefsListBrokenAndMissingByName_R5.)
func TestRefsReadGoToGitForWhatIsNotPlain_R2(t *testing.T) {
	ctx := context.Background()
	for name, spoil := range map[string]func(dir string, env []string) []string{
		"symbolic ref": func(dir string, env []string) []string {
			mustGit(t, env, "-C", dir, "symbolic-ref", "refs/flume/odd/sym", "refs/flume/places/fix--p1")
			return []string{"refs/flume/"}
		},
		"glob": func(string, []string) []string { return []string{"refs/flume/places/*"} },
	} {
		t.Run(name, func(t *testing.T) {
			dir, env := refsFixture(t)
			patterns := spoil(dir, env)
			r := &git.Runner{Env: env}
			repo := mustOpen(t, r, dir)
			r.Path = noGit
			if got, err := repo.ListRefs(ctx, patterns...); err == nil {
				t.Fatalf("answered without git: %v", got)
			}
			r.Path = ""
			got, err := repo.ListRefs(ctx, patterns...)
			if want := forEachRef(t, env, dir, patterns...); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("through git: %v, %v; for-each-ref %v", got, err, want)
			}
		})
	}
}

// TestRefsListBrokenAndMissingByName_R5: a loose ref whose file holds no
// object id, and a ref whose object the repository does not have, are
// listed with their type (broken, missing) beside every other ref, read in
// process or through git, so their reader names them; git's for-each-ref
// skips the one and dies on the other.
func TestRefsListBrokenAndMissingByName_R5(t *testing.T) {
	ctx := context.Background()
	dir, env := refsFixture(t)
	want := forEachRef(t, env, dir, "refs/flume/")
	odd := filepath.Join(dir, ".git", "refs", "flume", "odd")
	os.MkdirAll(odd, 0o755)
	os.WriteFile(filepath.Join(odd, "broken"), []byte("not an id\n"), 0o644)

	r := &git.Runner{Env: env}
	repo := mustOpen(t, r, dir)
	r.Path = noGit
	got, err := repo.ListRefs(ctx, "refs/flume/")
	if err != nil || !hasRef(got, "refs/flume/odd/broken", git.TypeBroken) || len(got) != len(want)+1 {
		t.Fatalf("in process: %v, %v; want %v and the broken one", got, err, want)
	}

	os.WriteFile(filepath.Join(odd, "pruned"), []byte(strings.Repeat("1", 40)+"\n"), 0o644)
	r.Path = ""
	got, err = repo.ListRefs(ctx, "refs/flume/")
	if err != nil || !hasRef(got, "refs/flume/odd/broken", git.TypeBroken) || !hasRef(got, "refs/flume/odd/pruned", git.TypeMissing) || len(got) != len(want)+2 {
		t.Fatalf("through git: %v, %v; want %v, the broken and the missing one", got, err, want)
	}
	for _, w := range want {
		if !hasRef(got, w.Name, w.Type) {
			t.Errorf("%s (%s) not listed", w.Name, w.Type)
		}
	}
}

func hasRef(refs []git.Ref, name, typ string) bool {
	for _, r := range refs {
		if r.Name == name && r.Type == typ {
			return true
		}
	}
	return false
}

// TestRefsListedInProcessWhilePackRefsRuns_R3: `git pack-refs --all
// --prune` moving loose refs into packed-refs while a listing reads never
// hides one: loose refs are read first, then packed-refs. Read the other
// way round, a ref packed and pruned in between is in neither.
func TestRefsListedInProcessWhilePackRefsRuns_R3(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t)
	dir := t.TempDir()
	mustGit(t, env, "init", "-q", dir)
	mustGit(t, env, "-C", dir, "commit", "-q", "--allow-empty", "-m", "x")
	head := mustGit(t, env, "-C", dir, "rev-parse", "HEAD")
	const n = 150
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "create refs/flume/places/fix--p%03d %s\n", i, head)
	}
	r := &git.Runner{Env: env}
	repo := mustOpen(t, r, dir)
	r.Path = noGit
	for round := range 20 {
		// All loose again, then packed while we list.
		del := exec.Command("sh", "-c", "git for-each-ref --format='delete %(refname)' refs/flume/ | git update-ref --stdin")
		del.Dir, del.Env = dir, env
		if out, err := del.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		upd := exec.Command("git", "update-ref", "--stdin")
		upd.Dir, upd.Env, upd.Stdin = dir, env, strings.NewReader(in.String())
		if out, err := upd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			pack := exec.Command("git", "pack-refs", "--all", "--prune")
			pack.Dir, pack.Env = dir, env
			pack.Run()
		})
		for range 10 {
			got, err := repo.ListRefs(ctx, "refs/flume/")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("round %d: listed %d refs of %d while pack-refs ran", round, len(got), n)
			}
		}
		wg.Wait()
	}
}

// TestPackedRecordsReadSideBySide_R4: after gc every record's objects are
// in a pack, which go-git reads; a listing large enough to be read on
// several goroutines reads them all, the same as git (run with -race).
func TestPackedRecordsReadSideBySide_R4(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t)
	dir := t.TempDir()
	mustGit(t, env, "init", "-q", dir)
	r := &git.Runner{Env: env}
	repo := mustOpen(t, r, dir)
	const n = 80
	for i := range n {
		state := fmt.Sprintf(`{"schema":1,"kind":"place","n":%d}`, i)
		blob, err := repo.WriteBlob(ctx, []byte(state))
		if err != nil {
			t.Fatal(err)
		}
		tree, err := repo.WriteTree(ctx, []git.TreeEntry{{Name: "state.json", ID: blob}})
		if err != nil {
			t.Fatal(err)
		}
		commit, err := repo.WriteCommit(ctx, git.CommitSpec{Tree: tree, Message: state, When: time.Unix(0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		mustGit(t, env, "-C", dir, "update-ref", fmt.Sprintf("refs/flume/places/fix--p%02d", i), commit)
	}
	mustGit(t, env, "-C", dir, "gc", "-q", "--prune=now")
	repo = mustOpen(t, r, dir)
	r.Path = noGit
	refs, err := repo.ListRefs(ctx, "refs/flume/")
	if err != nil || len(refs) != n {
		t.Fatalf("listed %d of %d: %v", len(refs), n, err)
	}
	ids := make([]string, n)
	for i, ref := range refs {
		ids[i] = ref.ID
	}
	objs, err := repo.FilesAt(ctx, ids, "state.json")
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range objs {
		if o.Type != "blob" || string(o.Data) != fmt.Sprintf(`{"schema":1,"kind":"place","n":%d}`, i) {
			t.Fatalf("%s: %s %q", refs[i].Name, o.Type, o.Data)
		}
	}

	// The pack is read through a memory map, which outlives the file: a
	// repack that replaces the pack under a running reader (a watcher)
	// changes nothing it reads, objects it never read before included.
	r.Path = ""
	fresh := mustOpen(t, r, dir)
	r.Path = noGit
	if _, err := fresh.FilesAt(ctx, ids[:1], "state.json"); err != nil {
		t.Fatal(err)
	}
	before, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
	mustGit(t, env, "-C", dir, "commit", "-q", "--allow-empty", "-m", "more")
	mustGit(t, env, "-C", dir, "repack", "-a", "-d", "-q", "-f")
	if after, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack")); len(after) != 1 || slices.Equal(before, after) {
		t.Fatalf("repack kept the pack: %v, then %v", before, after)
	}
	again, err := fresh.FilesAt(ctx, ids, "state.json")
	if err != nil {
		t.Fatalf("read after repack: %v", err)
	}
	for i := range again {
		if string(again[i].Data) != string(objs[i].Data) {
			t.Fatalf("%s after repack: %q, before %q", refs[i].Name, again[i].Data, objs[i].Data)
		}
	}
}

// TestResolveRefReadsPlainRefsInProcess_R4: a plain ref resolves without
// git (a watcher's step spawns nothing for its branch), a missing
// one is ErrNotExist, and anything with revision syntax is git's to judge.
func TestResolveRefReadsPlainRefsInProcess_R4(t *testing.T) {
	ctx := context.Background()
	dir, env := refsFixture(t)
	want := strings.TrimSpace(mustGit(t, env, "-C", dir, "rev-parse", "refs/flume/places/fix--p1"))
	r := &git.Runner{Env: env}
	repo := mustOpen(t, r, dir)
	r.Path = noGit
	if got, err := repo.ResolveRef(ctx, "refs/flume/places/fix--p1"); err != nil || got != want {
		t.Errorf("in process: %q, %v; want %q", got, err, want)
	}
	if _, err := repo.ResolveRef(ctx, "refs/heads/no-such-branch"); !errors.Is(err, git.ErrNotExist) {
		t.Errorf("a missing ref: %v; want ErrNotExist", err)
	}
	if _, err := repo.ResolveRef(ctx, "refs/flume/places/fix--p1^{commit}"); err == nil {
		t.Error("revision syntax answered without git")
	}
	r.Path = ""
	if got, err := repo.ResolveRef(ctx, "refs/flume/places/fix--p1^{commit}"); err != nil || got != want {
		t.Errorf("through git: %q, %v; want %q", got, err, want)
	}
}

// TestPackedRefsReadAgainOnceReplaced_R3: one Repo reading a packed ref
// again and again (tidy judging every place, a watcher's steps) keeps
// packed-refs as read, yet sees every rewrite of it: a ref moved and packed
// again, a packed ref deleted, packed-refs removed with every ref loose.
func TestPackedRefsReadAgainOnceReplaced_R3(t *testing.T) {
	ctx := context.Background()
	dir, env := refsFixture(t)
	run := func(args ...string) string { return mustGit(t, env, append([]string{"-C", dir}, args...)...) }
	r := &git.Runner{Env: env}
	repo := mustOpen(t, r, dir)
	r.Path = noGit
	read := func(name, want, when string) {
		t.Helper()
		for range 2 {
			if got, err := repo.RefValue(ctx, name); err != nil || got != want {
				t.Fatalf("%s: %s = %q, %v; want %q", when, name, got, err, want)
			}
		}
	}
	p0, p2 := "refs/flume/places/fix--p0", "refs/flume/places/fix--p2"
	read(p0, run("rev-parse", p0), "packed")
	moved := run("rev-parse", p2)
	run("update-ref", p0, moved)
	run("pack-refs", "--all")
	read(p0, moved, "moved and packed again")
	run("update-ref", "-d", p2)
	read(p2, "", "a packed ref deleted")
	read(p0, moved, "beside a deleted one")
	main := run("rev-parse", "refs/heads/main")
	run("update-ref", p0, main)
	if err := os.Remove(filepath.Join(dir, ".git", "packed-refs")); err != nil {
		t.Fatal(err)
	}
	read(p0, main, "loose, packed-refs gone")
	read("refs/flume/places/fix--p4", "", "packed-refs gone with the ref it held")
}
