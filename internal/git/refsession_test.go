package git_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/internal/git"
)

// TestRefSessionTransactionsShareOneProcess_R2: a session's transactions
// run through one update-ref, each all or nothing and checked against its
// old values; a refused one is told as UpdateRefs tells it (a conflict, a
// held lock, a missing object), leaves every ref where it was, and the
// session goes on in a new process.
func TestRefSessionTransactionsShareOneProcess_R2(t *testing.T) {
	ctx := context.Background()
	env, dir, one := repoWithCommit(t)
	mustGit(t, env, "-C", dir, "commit", "-q", "--allow-empty", "-m", "two")
	two := mustGit(t, env, "-C", dir, "rev-parse", "HEAD")

	calls := filepath.Join(t.TempDir(), "calls")
	wrapper := filepath.Join(t.TempDir(), "git")
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %q\nexec git \"$@\"\n", calls)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	repo := mustOpen(t, &git.Runner{Env: env, Path: wrapper}, dir)
	updateRefs := func() int {
		data, _ := os.ReadFile(calls)
		return strings.Count(string(data), "update-ref")
	}
	value := func(ref string) string {
		out, _ := gitOut(t, env, "-C", dir, "rev-parse", "-q", "--verify", ref)
		return strings.TrimSpace(out)
	}

	s := repo.OpenRefSession("test", git.Records)
	defer s.Close()
	steps := [][]git.RefUpdate{
		{{Op: git.Create, Name: "refs/flume/a", New: one}, {Op: git.Create, Name: "refs/flume/b", New: one}},
		{{Op: git.Update, Name: "refs/flume/a", New: two, Old: one}},
		{{Op: git.Delete, Name: "refs/flume/b", Old: one}},
	}
	for i, updates := range steps {
		if err := s.Update(ctx, updates); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if value("refs/flume/a") != two || value("refs/flume/b") != "" {
		t.Fatalf("after three steps: a=%s b=%q", value("refs/flume/a"), value("refs/flume/b"))
	}
	if n := updateRefs(); n != 1 {
		t.Fatalf("three transactions took %d update-ref processes, want 1", n)
	}

	// A lost race: nothing of the transaction moves.
	err := s.Update(ctx, []git.RefUpdate{{Op: git.Create, Name: "refs/flume/c", New: one}, {Op: git.Update, Name: "refs/flume/a", New: one, Old: one}})
	var conflict *git.ConflictError
	if !errors.As(err, &conflict) || len(conflict.Conflicts) != 1 || conflict.Conflicts[0].Name != "refs/flume/a" || conflict.Conflicts[0].Found != two {
		t.Fatalf("stale old value: %v, want a conflict on refs/flume/a found at %s", err, two)
	}
	if value("refs/flume/c") != "" || value("refs/flume/a") != two {
		t.Fatalf("a refused transaction moved a ref: c=%q a=%s", value("refs/flume/c"), value("refs/flume/a"))
	}

	// A held lock, then a missing object: each told as UpdateRefs tells it.
	lock := filepath.Join(dir, ".git", "refs", "flume", "a.lock")
	os.WriteFile(lock, nil, 0o644)
	if err := s.Update(ctx, []git.RefUpdate{{Op: git.Update, Name: "refs/flume/a", New: one, Old: two}}); !errors.Is(err, git.ErrLocked) {
		t.Fatalf("held lock: %v, want ErrLocked", err)
	}
	os.Remove(lock)
	var uerr *git.UpdateError
	if err := s.Update(ctx, []git.RefUpdate{{Op: git.Create, Name: "refs/flume/d", New: strings.Repeat("1", 40)}}); !errors.As(err, &uerr) {
		t.Fatalf("missing object: %v, want an UpdateError", err)
	}

	// The session goes on after each refusal.
	before := updateRefs()
	if err := s.Update(ctx, []git.RefUpdate{{Op: git.Update, Name: "refs/flume/a", New: one, Old: two}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, []git.RefUpdate{{Op: git.Update, Name: "refs/flume/a", New: two, Old: one}}); err != nil {
		t.Fatal(err)
	}
	if value("refs/flume/a") != two || updateRefs() != before+1 {
		t.Fatalf("after refusals: a=%s, %d new processes for two transactions", value("refs/flume/a"), updateRefs()-before)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// TestRefSessionCanceledUpdateLeavesNoLock_R2: a transaction stopped by
// its context (the process killed) leaves no lock and no half-moved ref.
func TestRefSessionCanceledUpdateLeavesNoLock_R2(t *testing.T) {
	env, dir, one := repoWithCommit(t)
	repo := mustOpen(t, &git.Runner{Env: env}, dir)
	s := repo.OpenRefSession("", git.Records)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Update(ctx, []git.RefUpdate{{Op: git.Create, Name: "refs/flume/a", New: one}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled update: %v", err)
	}
	s.Close()
	locks, _ := filepath.Glob(filepath.Join(dir, ".git", "refs", "flume", "*.lock"))
	if len(locks) != 0 {
		t.Fatalf("locks left: %v", locks)
	}
	// Whether it committed is the ref's to say; either way the next
	// transaction sees one whole state.
	if err := repo.UpdateRefs(context.Background(), []git.RefUpdate{{Op: git.Delete, Name: "refs/flume/a", Old: one}}); err != nil {
		var c *git.ConflictError
		if !errors.As(err, &c) || c.Conflicts[0].Found != "" {
			t.Fatalf("after a canceled update: %v", err)
		}
	}
}

// TestFlumeWritesRunNoHooks_T1: a transaction of flume's own records starts
// no reference-transaction hook (a shell per phase, for nothing anyone
// outside flume needs), while one that moves a branch does: a branch moved
// may be a landing. A session of flume's refs refuses to move a branch.
func TestFlumeWritesRunNoHooks_T1(t *testing.T) {
	env, dir, one := repoWithCommit(t)
	log := filepath.Join(t.TempDir(), "hook.log")
	hook := "#!/bin/sh\ncat >> " + log + "\n"
	if err := os.WriteFile(filepath.Join(dir, ".git", "hooks", "reference-transaction"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	repo := mustOpen(t, &git.Runner{Env: env}, dir)
	ctx := context.Background()
	ran := func() string { data, _ := os.ReadFile(log); return string(data) }

	if err := repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Create, Name: "refs/flume/a", New: one}}); err != nil {
		t.Fatal(err)
	}
	s := repo.OpenRefSession("launch", git.Records)
	defer s.Close()
	if err := s.Update(ctx, []git.RefUpdate{{Op: git.Create, Name: "refs/flume/b", New: one}}); err != nil {
		t.Fatal(err)
	}
	if got := ran(); got != "" {
		t.Fatalf("flume's own writes ran the hook: %q", got)
	}
	if err := s.Update(ctx, []git.RefUpdate{{Op: git.Create, Name: "refs/heads/x", New: one}}); err == nil {
		t.Fatal("a session of flume's refs moved a branch")
	}
	if err := repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Create, Name: "refs/heads/b", New: one}}); err != nil {
		t.Fatal(err)
	}
	if got := ran(); !strings.Contains(got, " refs/heads/b") {
		t.Fatalf("a branch moved did not run the hook: %q", got)
	}
}

// repoWithCommit makes a repository with one empty commit, and returns the
// environment git runs in, its folder and the commit.
func repoWithCommit(t *testing.T) (env []string, dir, head string) {
	t.Helper()
	env, dir = testEnv(t), t.TempDir()
	mustGit(t, env, "init", "-q", dir)
	mustGit(t, env, "-C", dir, "commit", "-q", "--allow-empty", "-m", "one")
	return env, dir, mustGit(t, env, "-C", dir, "rev-parse", "HEAD")
}
