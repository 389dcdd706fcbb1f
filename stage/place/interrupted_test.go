package place_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/report"
)

// interrupt rewrites a made place's record as its launch would have left
// it, killed (or hung up) before it wrote "made": phase making, its
// launcher a process that is gone.
func interrupt(t *testing.T, f *fixture, id string) {
	t.Helper()
	editPlaceRecord(t, f, id, "interrupted", func(p *record.Place) {
		p.Phase, p.Launcher = record.PhaseMaking, &record.Proc{PID: 999999, Host: "testhost"}
	})
}

func placeOf(t *testing.T, st *report.Status, id string) *report.PlaceStatus {
	t.Helper()
	for i := range st.Places {
		if st.Places[i].Place == id {
			return &st.Places[i]
		}
	}
	t.Fatalf("no place %s in status (problems %+v)", id, st.Problems)
	return nil
}

// TestInterruptedLaunchKeepsWork_L1_X2: a launch cut short (SIGHUP, SIGKILL)
// after its worktree was made leaves a place someone may already work in.
// What settles it (tidy; status only shows it) never removes a worktree
// holding a commit or a file beyond its base: it finishes the place as
// made. One holding nothing is
// cleaned up as before.
func TestInterruptedLaunchKeepsWork_L1_X2(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	env := f.stageEnv(f.env)
	for _, name := range []string{"committed", "untracked", "changed", "empty"} {
		if _, err := place.MakePlace(ctx, env, f.dir, place.LaunchOptions{Kind: "fix", Name: name, Brief: "b"}); err != nil {
			t.Fatal(err)
		}
	}
	place := func(name string) string { return filepath.Join(f.dir, "places", "fix--"+name) }
	os.WriteFile(filepath.Join(place("committed"), "work"), []byte("mine\n"), 0o644)
	f.git("-C", place("committed"), "add", "work")
	f.git("-C", place("committed"), "commit", "-q", "-m", "users work")
	os.WriteFile(filepath.Join(place("untracked"), "notes"), []byte("mine\n"), 0o644)
	os.WriteFile(filepath.Join(place("changed"), ".keep"), []byte("x"), 0o644)
	f.git("-C", place("changed"), "add", ".keep")
	for _, name := range []string{"committed", "untracked", "changed", "empty"} {
		interrupt(t, f, "fix--"+name)
	}

	settle(t, f, env)
	st, err := report.ReadStatus(ctx, env, report.StatusOptions{Repo: f.dir, All: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"committed", "untracked", "changed"} {
		ps := placeOf(t, st, "fix--"+name)
		if ps.Phase != record.PhaseMade || ps.Worktree != "present" {
			t.Errorf("%s: phase %s, worktree %s; want made, present", name, ps.Phase, ps.Worktree)
		}
		if _, err := os.Stat(place(name)); err != nil {
			t.Errorf("%s: worktree removed: %v", name, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(place("untracked"), "notes")); err != nil || string(b) != "mine\n" {
		t.Errorf("untracked file lost: %q, %v", b, err)
	}
	if ps := placeOf(t, st, "fix--empty"); ps.Phase != record.PhaseTidied {
		t.Errorf("empty: phase %s, want tidied", ps.Phase)
	}
	if _, err := os.Lstat(place("empty")); err == nil {
		t.Error("empty: worktree of an interrupted launch holding nothing was kept")
	}
}

// TestLaunchKilledInsideWorktreeAdd_L1: a `git worktree add` killed after it
// wrote its administrative folder's gitdir file but before it wrote
// commondir leaves git failing every `worktree list` (and never pruning the folder,
// locked "initializing"). Status shows it and touches nothing; the next
// tidy repairs exactly that folder and cleans the launch up.
func TestLaunchKilledInsideWorktreeAdd_L1(t *testing.T) {
	f, env, path := cutInsideWorktreeAdd(t)
	if phase := settledPhase(t, f, env, "fix--cut"); phase != record.PhaseTidied {
		t.Errorf("phase %s, want tidied", phase)
	}
	if _, err := os.Lstat(path); err == nil {
		t.Error("the interrupted launch's folder stayed")
	}
	if out := f.git("-C", f.dir, "worktree", "list"); strings.Contains(out, "fix--cut") {
		t.Errorf("git still lists the worktree: %s", out)
	}
}

// cutInsideWorktreeAdd leaves place fix--cut as a launch whose `git
// worktree add` was killed between creating its administrative folder's
// commondir file and writing it, and returns the fixture, its Env and the
// place's path.
func cutInsideWorktreeAdd(t *testing.T) (*fixture, *stage.Env, string) {
	t.Helper()
	f, env, path := cutBeforeWorktree(t)
	f.git("-C", f.dir, "branch", "-D", "fix/cut")
	admin := filepath.Join(f.dir, ".git", "worktrees", "fix--cut")
	os.MkdirAll(admin, 0o755)
	os.WriteFile(filepath.Join(admin, "locked"), []byte("initializing\n"), 0o644)
	os.WriteFile(filepath.Join(admin, "gitdir"), []byte(filepath.Join(path, ".git")+"\n"), 0o644)
	os.WriteFile(filepath.Join(admin, "commondir"), nil, 0o644) // created, not yet written
	os.MkdirAll(path, 0o755)
	os.WriteFile(filepath.Join(path, ".git"), []byte("gitdir: "+admin+"\n"), 0o644)
	if _, err := (&git.Runner{Env: f.env}).Open(context.Background(), f.dir); err != nil {
		t.Fatal(err)
	}
	if out, err := gitFails(f, "-C", f.dir, "worktree", "list"); err == nil {
		t.Fatalf("the planted state should make git fail, got %s", out)
	}
	return f, env, path
}

// TestLaunchBesideAWorktreeCutShort_L1: the half-written folder a launch
// killed inside `git worktree add` leaves makes git fail every worktree
// command, the next launch's among them. That launch repairs what this
// host's dead launches left, as tidy does, and goes on: its place is made
// and the cut one's folder is gone.
func TestLaunchBesideAWorktreeCutShort_L1(t *testing.T) {
	f, env, path := cutInsideWorktreeAdd(t)
	if _, err := place.MakePlace(context.Background(), env, f.dir, place.LaunchOptions{Kind: "fix", Name: "next", Brief: "b"}); err != nil {
		t.Fatalf("a launch beside the cut one: %v", err)
	}
	out := f.git("-C", f.dir, "worktree", "list", "--porcelain")
	if !strings.Contains(out, "fix--next") || strings.Contains(out, "fix--cut") {
		t.Errorf("worktrees after: %s", out)
	}
	if _, err := os.Lstat(filepath.Join(path, ".git")); err == nil {
		t.Error("the cut launch's .git file stayed")
	}
}

// settledPhase settles what a killed launch left (settle) and returns
// place id's phase as status then shows it.
func settledPhase(t *testing.T, f *fixture, env *stage.Env, id string) string {
	t.Helper()
	settle(t, f, env)
	st, err := report.ReadStatus(context.Background(), env, report.StatusOptions{Repo: f.dir, All: true})
	if err != nil {
		t.Fatal(err)
	}
	return placeOf(t, st, id).Phase
}

// cutBeforeWorktree leaves place fix--cut as a launch killed after its
// making record and branch, before its worktree: it returns the fixture,
// its Env and the place's path.
func cutBeforeWorktree(t *testing.T) (*fixture, *stage.Env, string) {
	t.Helper()
	f := newFixture(t)
	env := f.stageEnv(f.env)
	if _, err := place.MakePlace(context.Background(), env, f.dir, place.LaunchOptions{Kind: "fix", Name: "cut", Brief: "b"}); err != nil {
		t.Fatal(err)
	}
	interrupt(t, f, "fix--cut")
	path := filepath.Join(f.dir, "places", "fix--cut")
	f.git("-C", f.dir, "worktree", "remove", "--force", path)
	return f, env, path
}

func gitFails(f *fixture, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Env = f.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestParallelTidiesAllSucceed_T1_L2b: tidy passes run one at a time per
// repository, so concurrent ones never fail on each other's removals:
// every pass exits cleanly and every dropped place is tidied once.
func TestParallelTidiesAllSucceed_T1_L2b(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	env := f.stageEnv(f.env)
	for i := range 6 {
		name := fmt.Sprintf("p%d", i)
		if _, err := place.MakePlace(ctx, env, f.dir, place.LaunchOptions{Kind: "fix", Name: name, Brief: "b"}); err != nil {
			t.Fatal(err)
		}
		if _, err := dropIn(ctx, env, f.dir, stage.PlaceOptions{Place: "fix--" + name}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	results := make([][]place.TidyResult, 4)
	errs := make([]error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = tidyIn(ctx, env, f.dir)
		}()
	}
	wg.Wait()
	tidied := map[string]int{}
	for i := range 4 {
		if errs[i] != nil {
			t.Errorf("tidy %d: %v", i, errs[i])
		}
		for _, r := range results[i] {
			if r.Tidied {
				tidied[r.Place]++
			}
		}
	}
	for i := range 6 {
		if n := tidied[fmt.Sprintf("fix--p%d", i)]; n != 1 {
			t.Errorf("fix--p%d tidied %d times", i, n)
		}
	}
}

// TestLaunchKilledInsideCheckout_L1: a `git worktree add` killed in the
// middle of its checkout leaves the place's files written in full or in
// part and no index. That is git's, not anyone's work: the next tidy
// cleans the launch up instead of keeping a torn place as made. A file
// that is not a write of git's (work) keeps it, as before.
func TestLaunchKilledInsideCheckout_L1(t *testing.T) {
	for _, c := range []struct {
		name  string
		write string
		want  string
	}{
		{"a torn write", "const a = 1\n", record.PhaseTidied},
		{"someone's edit", "const a = 2 // mine\n", record.PhaseMade},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			os.WriteFile(filepath.Join(f.dir, "a.js"), []byte("const a = 1\nconst b = 2\n"), 0o644)
			f.git("-C", f.dir, "add", ".")
			f.git("-C", f.dir, "commit", "-q", "-m", "code")
			ctx := context.Background()
			env := f.stageEnv(f.env)
			if _, err := place.MakePlace(ctx, env, f.dir, place.LaunchOptions{Kind: "fix", Name: "cut", Brief: "b"}); err != nil {
				t.Fatal(err)
			}
			interrupt(t, f, "fix--cut")
			path := filepath.Join(f.dir, "places", "fix--cut")
			admin := filepath.Join(f.dir, ".git", "worktrees", "fix--cut")
			// The checkout as a kill leaves it: no index, a file written
			// in part.
			os.Remove(filepath.Join(admin, "index"))
			os.WriteFile(filepath.Join(path, "a.js"), []byte(c.write), 0o644)
			if phase := settledPhase(t, f, env, "fix--cut"); phase != c.want {
				t.Fatalf("phase %s, want %s", phase, c.want)
			}
		})
	}
}

// TestLaunchCutBeforeWorktreeAdd_L1: with no reference-transaction hook,
// the making record and the place's branch are written in one
// transaction, before `git worktree add`. A launch killed between the two
// leaves the branch at its base and no worktree: the next tidy removes the
// branch (nothing is on it) and settles the record as interrupted.
func TestLaunchCutBeforeWorktreeAdd_L1(t *testing.T) {
	f, env, _ := cutBeforeWorktree(t)
	if got, want := f.git("-C", f.dir, "rev-parse", "fix/cut"), f.git("-C", f.dir, "rev-parse", "main"); got != want {
		t.Fatalf("the branch is at %s, want its base %s", got, want)
	}

	if phase := settledPhase(t, f, env, "fix--cut"); phase != record.PhaseTidied {
		t.Errorf("phase %s, want tidied", phase)
	}
	if out, err := gitFails(f, "-C", f.dir, "rev-parse", "--verify", "-q", "refs/heads/fix/cut"); err == nil {
		t.Errorf("the interrupted launch's branch stayed, at %s", out)
	}
}

// TestRefusedWorktreeAddUndoesTheLaunch_L1: a worktree's checkout that
// fails after the record and the branch were written (here refused by the
// git flume runs: `git worktree add`, or the `git reset --hard` that
// checks out a worktree whose files flume wrote itself) leaves neither
// behind: the worktree is removed, the branch flume made in its
// transaction too, the record settles as interrupted, and the launch says
// what git said. The same launch then succeeds.
func TestRefusedWorktreeAddUndoesTheLaunch_L1(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "calls")
	script := fmt.Sprintf(`#!/bin/sh
echo "$*" >> %q
case "$1 $2" in
"worktree add"|"reset --hard") echo "fatal: refused by the test" >&2; exit 128 ;;
esac
exec %q "$@"
`, log, real)
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := f.stageEnv(f.env)
	env.Runner.Path = filepath.Join(bin, "git")
	opts := place.LaunchOptions{Kind: "fix", Name: "no", Brief: "b"}

	_, err = place.MakePlace(ctx, env, f.dir, opts)
	if err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("launch: %v; want git's refusal", err)
	}
	calls, _ := os.ReadFile(log)
	if !strings.Contains(string(calls), "worktree add --quiet "+filepath.Join(f.dir, "places", "fix--no")+" fix/no\n") &&
		!strings.Contains(string(calls), "reset --hard --no-recurse-submodules --quiet\n") {
		t.Fatalf("no worktree was checked out on the branch made with the record:\n%s", calls)
	}
	if _, err := os.Lstat(filepath.Join(f.dir, "places", "fix--no")); err == nil {
		t.Error("the refused launch's worktree folder stayed")
	}
	if out, err := gitFails(f, "-C", f.dir, "worktree", "list", "--porcelain"); err != nil || strings.Contains(out, "fix--no") {
		t.Errorf("git still lists the refused launch's worktree (%v):\n%s", err, out)
	}
	if out, err := gitFails(f, "-C", f.dir, "rev-parse", "--verify", "-q", "refs/heads/fix/no"); err == nil {
		t.Errorf("the refused launch's branch stayed, at %s", out)
	}
	st, err := report.ReadStatus(ctx, env, report.StatusOptions{Repo: f.dir, All: true})
	if err != nil {
		t.Fatal(err)
	}
	if ps := placeOf(t, st, "fix--no"); ps.Phase != record.PhaseTidied {
		t.Errorf("phase %s, want tidied", ps.Phase)
	}
	if _, err := place.MakePlace(ctx, f.stageEnv(f.env), f.dir, opts); err != nil {
		t.Fatalf("the same launch after: %v", err)
	}
}
