package git_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/git"
)

func TestMain(m *testing.M) {
	if os.Getenv("FLUME_GIT_HELPER") == "hookwrite" {
		os.Exit(hookWrite())
	}
	os.Exit(m.Run())
}

// hookWrite runs inside a git hook of one repository and writes a ref in
// another (FLUME_TARGET), with the hook's environment as it came.
func hookWrite() int {
	ctx := context.Background()
	repo, err := (&git.Runner{}).Open(ctx, os.Getenv("FLUME_TARGET"))
	if err == nil {
		err = writeRef(ctx, repo, "refs/flume/hooked")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func writeRef(ctx context.Context, repo *git.Repo, ref string) error {
	blob, err := repo.WriteBlob(ctx, []byte(`{"schema":1,"kind":"place"}`))
	if err != nil {
		return err
	}
	tree, err := repo.WriteTree(ctx, []git.TreeEntry{{Name: "state.json", ID: blob}})
	if err != nil {
		return err
	}
	commit, err := repo.WriteCommit(ctx, git.CommitSpec{Tree: tree, Message: "from a hook", When: time.Unix(0, 0)})
	if err != nil {
		return err
	}
	return repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Create, Name: ref, New: commit}})
}

func testEnv(t *testing.T) []string {
	home := t.TempDir()
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + filepath.Join(home, ".gitconfig"),
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com",
	}
}

func gitOut(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func mustGit(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, err := gitOut(t, env, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestHookEnvironmentDoesNotRedirect_R9: run from a hook of repository A,
// where git exported GIT_DIR and GIT_INDEX_FILE (absolute, pointing at A),
// the runner writes to repository B, the one it was asked to write to.
func TestHookEnvironmentDoesNotRedirect_R9(t *testing.T) {
	env := testEnv(t)
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, d := range []string{a, b} {
		mustGit(t, env, "init", "-q", d)
		mustGit(t, env, "-C", d, "commit", "-q", "--allow-empty", "-m", "init")
	}
	seen := filepath.Join(root, "hook-env")
	hook := "#!/bin/sh\n" +
		"export GIT_INDEX_FILE=\"${GIT_INDEX_FILE:-$GIT_DIR/index}\"\n" +
		"env | grep '^GIT_' > '" + seen + "'\n" +
		"exec '" + os.Args[0] + "'\n"
	if err := os.WriteFile(filepath.Join(a, ".git", "hooks", "post-commit"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	hookEnv := append(append([]string{}, env...), "FLUME_GIT_HELPER=hookwrite", "FLUME_TARGET="+b)
	cmd := exec.Command("git", "--git-dir="+filepath.Join(a, ".git"), "--work-tree="+a, "commit", "-q", "--allow-empty", "-m", "trigger")
	cmd.Dir = a
	cmd.Env = hookEnv
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("commit in a: %v\n%s", err, out)
	}
	exported, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(exported), "GIT_DIR="+filepath.Join(a, ".git")) || !strings.Contains(string(exported), "GIT_INDEX_FILE=") {
		t.Fatalf("the hook did not see GIT_DIR and GIT_INDEX_FILE pointing at a:\n%s", exported)
	}
	if _, err := gitOut(t, env, "-C", a, "rev-parse", "--verify", "refs/flume/hooked"); err == nil {
		t.Fatal("the write landed in a, the hook's repository")
	}
	commit := mustGit(t, env, "-C", b, "rev-parse", "--verify", "refs/flume/hooked")
	mustGit(t, env, "-C", b, "cat-file", "-e", commit+":state.json")
	if _, err := gitOut(t, env, "-C", a, "cat-file", "-e", commit); err == nil {
		t.Fatal("objects were written into a")
	}
}

func TestOpenOutsideRepository(t *testing.T) {
	_, err := (&git.Runner{Env: testEnv(t)}).Open(context.Background(), t.TempDir())
	if !errors.Is(err, git.ErrNotExist) {
		t.Fatalf("got %v, want ErrNotExist", err)
	}
}

func TestResolveRefNotFoundFromExitStatus_R9(t *testing.T) {
	env := testEnv(t)
	dir := t.TempDir()
	mustGit(t, env, "init", "-q", dir)
	repo, err := (&git.Runner{Env: env}).Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	// A name that looks like an option is taken as a revision, not a flag.
	for _, ref := range []string{"refs/flume/none", "--all"} {
		if _, err := repo.ResolveRef(context.Background(), ref); !errors.Is(err, git.ErrNotExist) {
			t.Errorf("%s: got %v, want ErrNotExist", ref, err)
		}
	}
}

// TestLockedRefIsNotAConflict: a ref whose lock another git holds, but whose
// value is what the caller read, is reported as locked, not as a lost race.
func TestLockedRefIsNotAConflict(t *testing.T) {
	env := testEnv(t)
	dir := t.TempDir()
	mustGit(t, env, "init", "-q", dir)
	mustGit(t, env, "-C", dir, "commit", "-q", "--allow-empty", "-m", "x")
	head := mustGit(t, env, "-C", dir, "rev-parse", "HEAD")
	mustGit(t, env, "-C", dir, "update-ref", "refs/flume/l", head)
	lock := filepath.Join(dir, ".git", "refs", "flume", "l.lock")
	os.WriteFile(lock, nil, 0o644)
	repo, _ := (&git.Runner{Env: env}).Open(context.Background(), dir)
	err := repo.UpdateRefs(context.Background(), []git.RefUpdate{{Op: git.Delete, Name: "refs/flume/l", Old: head}})
	var conflict *git.ConflictError
	if !errors.Is(err, git.ErrLocked) || errors.As(err, &conflict) {
		t.Fatalf("got %v, want ErrLocked", err)
	}
	os.Remove(lock)
	if err := repo.UpdateRefs(context.Background(), []git.RefUpdate{{Op: git.Delete, Name: "refs/flume/l", Old: head}}); err != nil {
		t.Fatal(err)
	}
}

// TestOpenTopAgreesWithOpen: reading git's files gives the repository git
// itself reports, and anything unusual is left to git.
func TestOpenTopAgreesWithOpen(t *testing.T) {
	env := testEnv(t)
	ctx := context.Background()
	r := &git.Runner{Env: env}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	mustGit(t, env, "init", "-q", plain)
	sha256 := filepath.Join(dir, "sha256")
	mustGit(t, env, "init", "-q", "--object-format=sha256", sha256)
	linked := filepath.Join(dir, "linked")
	mustGit(t, env, "-C", plain, "commit", "-q", "--allow-empty", "-m", "x")
	mustGit(t, env, "-C", plain, "worktree", "add", "-q", linked)
	for _, d := range []string{plain, sha256, linked} {
		want, err := r.Open(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.OpenTop(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if got.Dir != want.Dir || got.GitDir != want.GitDir || got.CommonDir != want.CommonDir || got.ObjectFormat != want.ObjectFormat || got.Bare != want.Bare {
			t.Errorf("%s: OpenTop %+v, Open %+v", d, got, want)
		}
		if branch, err := got.WorktreeBranch(d); err != nil || branch == "" {
			t.Errorf("%s: WorktreeBranch = %q, %v", d, branch, err)
		}
	}
	// A worktree of another repository is not this one's.
	if _, err := mustOpen(t, r, sha256).WorktreeBranch(linked); !errors.Is(err, git.ErrNotExist) {
		t.Errorf("another repository's worktree: %v", err)
	}
}

func mustOpen(t *testing.T, r *git.Runner, dir string) *git.Repo {
	repo, err := r.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// TestRefusedUpdateSaysWhy_R2: a transaction git refuses with every ref where
// the caller expected and no lock held is not reported as a lock (which a
// caller would wait out for nothing), and a bad ref name is refused before
// git runs, naming the rule.
func TestRefusedUpdateSaysWhy_R2(t *testing.T) {
	env := testEnv(t)
	dir := t.TempDir()
	mustGit(t, env, "init", "-q", dir)
	repo := mustOpen(t, &git.Runner{Env: env}, dir)
	ctx := context.Background()

	missing := strings.Repeat("1", 40)
	err := repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Create, Name: "refs/flume/x", New: missing}})
	var uerr *git.UpdateError
	if errors.Is(err, git.ErrLocked) || !errors.As(err, &uerr) {
		t.Errorf("missing object: got %v, want an UpdateError that is not ErrLocked", err)
	}
	if err != nil && !strings.Contains(err.Error(), missing) {
		t.Errorf("missing object: %v does not name the object", err)
	}

	for _, name := range []string{"refs/flume/places/fix--x.", "refs/flume/a..b", "refs/flume/x.lock", "refs/flume/.x", "refs/flume/a b"} {
		err := repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Create, Name: name, New: missing}})
		if err == nil || errors.Is(err, git.ErrLocked) || !strings.Contains(err.Error(), "invalid ref name") {
			t.Errorf("%q: got %v, want an invalid ref name", name, err)
		}
	}
}

// TestObjectsWrittenInProcessAreGits_R1: the blob, tree and commit a record
// write makes in process are the objects git itself would make (same ids),
// read back by git as written, pass a strict fsck, and writing one again
// (its file already there) gives the same id.
func TestObjectsWrittenInProcessAreGits_R1(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t)
	dir := t.TempDir()
	mustGit(t, env, "init", "-q", dir)
	repo, err := (&git.Runner{Env: env}).Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("{\"schema\":1,\"kind\":\"place\",\"brief\":\"ü\\n\"}\n")
	blob, err := repo.WriteBlob(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "-C", dir, "hash-object", "--stdin")
	cmd.Env, cmd.Stdin = env, bytes.NewReader(data)
	if want, err := cmd.Output(); err != nil || blob != strings.TrimSpace(string(want)) {
		t.Fatalf("blob %s, git hashes it %s (%v)", blob, want, err)
	}
	if got := mustGit(t, env, "-C", dir, "cat-file", "blob", blob); got != strings.TrimSpace(string(data)) {
		t.Fatalf("git reads the blob as %q", got)
	}
	tree, err := repo.WriteTree(ctx, []git.TreeEntry{{Name: "state.json", ID: blob}, {Name: "a", ID: blob}})
	if err != nil {
		t.Fatal(err)
	}
	mk := exec.Command("git", "-C", dir, "mktree")
	mk.Env, mk.Stdin = env, strings.NewReader("100644 blob "+blob+"\ta\n100644 blob "+blob+"\tstate.json\n")
	if want, err := mk.Output(); err != nil || tree != strings.TrimSpace(string(want)) {
		t.Fatalf("tree %s, git makes %s (%v)", tree, want, err)
	}
	when := time.Date(2026, 12, 1, 5, 0, 0, 0, time.FixedZone("", 3600))
	commit, err := repo.WriteCommit(ctx, git.CommitSpec{Tree: tree, Message: "state", When: when})
	if err != nil {
		t.Fatal(err)
	}
	ct := exec.Command("git", "-C", dir, "commit-tree", tree)
	date := when.Format(time.RFC3339)
	ct.Env = append(env, "GIT_AUTHOR_NAME=git-flume", "GIT_AUTHOR_EMAIL=git-flume@localhost", "GIT_COMMITTER_NAME=git-flume",
		"GIT_COMMITTER_EMAIL=git-flume@localhost", "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	ct.Stdin = strings.NewReader("state\n")
	if want, err := ct.Output(); err != nil || commit != strings.TrimSpace(string(want)) {
		t.Fatalf("commit %s, git makes %s (%v)", commit, want, err)
	}
	mustGit(t, env, "-C", dir, "update-ref", "refs/flume/x", commit)
	// A record's three objects written at once are the same three.
	state, err := repo.WriteState(ctx, "state.json", data, git.CommitSpec{Message: "state", When: when})
	if err != nil {
		t.Fatal(err)
	}
	single, err := repo.WriteTree(ctx, []git.TreeEntry{{Name: "state.json", ID: blob}})
	if err != nil {
		t.Fatal(err)
	}
	if one, err := repo.WriteCommit(ctx, git.CommitSpec{Tree: single, Message: "state", When: when}); err != nil || state != one {
		t.Fatalf("WriteState made %s, one object at a time makes %s (%v)", state, one, err)
	}
	mustGit(t, env, "-C", dir, "update-ref", "refs/flume/y", state)
	// An object that fits in a file-system block is stored as it is; a
	// larger one is deflated. git reads both as written.
	big := bytes.Repeat([]byte("{\"brief\":\"a longer brief\"}\n"), 300)
	bigID, err := repo.WriteBlob(ctx, big)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustGit(t, env, "-C", dir, "cat-file", "blob", bigID); got != strings.TrimSpace(string(big)) {
		t.Fatalf("git reads the large blob as %d bytes, want %d", len(got), len(big)-1)
	}
	mustGit(t, env, "-C", dir, "update-ref", "refs/flume/z", bigID)
	sizes := map[string]int{blob: len(fmt.Sprintf("blob %d\x00", len(data))) + len(data) + 11, bigID: -1}
	for id, want := range sizes {
		fi, err := os.Stat(filepath.Join(dir, ".git", "objects", id[:2], id[2:]))
		if err != nil {
			t.Fatal(err)
		}
		if want > 0 && fi.Size() != int64(want) {
			t.Errorf("small object %s: %d bytes on disk, want %d (stored)", id, fi.Size(), want)
		}
		if want < 0 && fi.Size() >= int64(len(big)) {
			t.Errorf("large object %s: %d bytes on disk for %d of content (not deflated)", id, fi.Size(), len(big))
		}
	}
	mustGit(t, env, "-C", dir, "fsck", "--strict", "--no-dangling")
	if again, err := repo.WriteBlob(ctx, data); err != nil || again != blob {
		t.Fatalf("writing the blob again: %s, %v", again, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "*", "tmp_obj_*")); len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// TestHookFileOnlyWhenKnown_L1: a launch makes the branch in its records'
// transaction, run with hooks off, only where it knows what
// reference-transaction hook git would run (none, or flume's own). Known
// means read in process: core.hooksPath in any scope, or configuration git
// must read itself (from the command line, a linked worktree) say "not
// known".
func TestHookFileOnlyWhenKnown_L1(t *testing.T) {
	env := testEnv(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repo")
	mustGit(t, env, "init", "-q", repo)
	mustGit(t, env, "-C", repo, "commit", "-q", "--allow-empty", "-m", "x")
	linked := filepath.Join(dir, "linked")
	mustGit(t, env, "-C", repo, "worktree", "add", "-q", linked)
	hook := filepath.Join(repo, ".git", "hooks", "reference-transaction")
	absent := func(env []string, dir string) bool {
		t.Helper()
		path, ok := mustOpen(t, &git.Runner{Env: env}, dir).HookFile("reference-transaction")
		if ok && path != hook {
			t.Errorf("hook file %s, want %s", path, hook)
		}
		_, err := os.Lstat(path)
		return ok && errors.Is(err, os.ErrNotExist)
	}

	if !absent(env, repo) {
		t.Error("a repository with only git's sample hooks: a hook may run")
	}
	if absent(append(env[:len(env):len(env)], "GIT_CONFIG_PARAMETERS='core.hooksPath'='/elsewhere'"), repo) {
		t.Error("core.hooksPath from the command line: said absent")
	}
	if absent(env, linked) {
		t.Error("a linked worktree, whose configuration git reads: said absent")
	}
	mustGit(t, env, "config", "--global", "core.hooksPath", filepath.Join(dir, "hooks"))
	if absent(env, repo) {
		t.Error("core.hooksPath in the global configuration: said absent")
	}
	mustGit(t, env, "config", "--global", "--unset", "core.hooksPath")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if absent(env, repo) {
		t.Error("a reference-transaction hook file there: said absent")
	}
}

// TestSymbolicBranchMovesNeverItsTarget_A13: a branch whose file an agent
// made a symbolic ref to main is moved or deleted itself by a
// transaction; main keeps its commit.
func TestSymbolicBranchMovesNeverItsTarget_A13(t *testing.T) {
	env := testEnv(t)
	dir := t.TempDir()
	mustGit(t, env, "init", "-q", "-b", "main", dir)
	mustGit(t, env, "-C", dir, "commit", "-q", "--allow-empty", "-m", "one")
	first := strings.TrimSpace(mustGit(t, env, "-C", dir, "rev-parse", "HEAD"))
	mustGit(t, env, "-C", dir, "commit", "-q", "--allow-empty", "-m", "two")
	main := strings.TrimSpace(mustGit(t, env, "-C", dir, "rev-parse", "HEAD"))
	repo := mustOpen(t, &git.Runner{Env: env}, dir)
	ctx := context.Background()
	branch := filepath.Join(dir, ".git", "refs", "heads", "place")
	for _, u := range []git.RefUpdate{
		{Op: git.Update, Name: "refs/heads/place", New: first, Old: main},
		{Op: git.Delete, Name: "refs/heads/place", Old: main},
	} {
		if err := os.WriteFile(branch, []byte("ref: refs/heads/main\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_ = repo.UpdateRefs(ctx, []git.RefUpdate{u}) // refused or applied to the branch alone
		if got := strings.TrimSpace(mustGit(t, env, "-C", dir, "rev-parse", "refs/heads/main")); got != main {
			t.Fatalf("op %v of a symbolic branch moved main from %s to %s", u.Op, main, got)
		}
	}
}
