package place_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/report"
)

func TestMain(m *testing.M) {
	if os.Getenv("FLUME_STAGE_HELPER") == "launch" {
		env := &stage.Env{Runner: &git.Runner{}, Kinds: testKinds, Host: "testhost", PID: os.Getpid(), Now: time.Now, CallerEnv: os.Environ(), Out: os.Stderr}
		// As git-flume's main: these signals end the command through its
		// context.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer stop()
		_, err := place.MakePlace(ctx, env, os.Getenv("FLUME_REPO"), place.LaunchOptions{Kind: "fix", Name: os.Getenv("FLUME_NAME"), Brief: "b"})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			stop()
			os.Exit(1)
		}
		stop()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestKilledLaunchLeavesConsistentPlace kills launches (with their git
// children) at random points, then reads status: every place is either
// made (worktree and branch present) or cleaned up (no worktree, no branch,
// record tidied or absent), a readying cut short shows as interrupted, and
// git fsck is clean.
func TestKilledLaunchLeavesConsistentPlace(t *testing.T) {
	if testing.Short() {
		t.Skip("kills 30 launches")
	}
	interruptLaunches(t, syscall.SIGKILL, 30)
}

// TestHungUpLaunchLeavesConsistentPlace: the same with the signals a
// closed terminal, Ctrl-C or a service manager sends, which git-flume
// catches: every place is made or cleaned up, never left half-made.
func TestHungUpLaunchLeavesConsistentPlace_L1(t *testing.T) {
	if testing.Short() {
		t.Skip("interrupts 30 launches")
	}
	n := 4
	if os.Getenv("FLUME_FULL_MATRIX") != "" {
		n = 10
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { interruptLaunches(t, sig, n) })
	}
}

// interruptLaunches sends sig to n launches' process groups at random
// points and checks what each left.
func interruptLaunches(t *testing.T, sig syscall.Signal, n int) {
	f := newFixture(t)
	os.MkdirAll(filepath.Join(f.dir, ".flume"), 0o755)
	os.WriteFile(filepath.Join(f.dir, ".flume", "config"), []byte("[ready]\n\tstep = sleep 0.05\n"), 0o644)
	f.git("-C", f.dir, "add", ".flume")
	f.git("-C", f.dir, "commit", "-q", "-m", "ready step")
	ctx := context.Background()
	env := f.stageEnv(f.env)
	outcomes := map[string]int{}
	for trial := range n {
		name := fmt.Sprintf("k%02d", trial)
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(append([]string{}, f.env...), "FLUME_STAGE_HELPER=launch", "FLUME_REPO="+f.dir, "FLUME_NAME="+name)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond)
		// The whole process group, as a terminal hangs up its foreground
		// job: git-flume and its git children alike.
		syscall.Kill(-cmd.Process.Pid, sig)
		cmd.Wait()

		// Status shows what the kill left and writes nothing; tidy settles
		// it. A SIGKILL inside `git update-ref` leaves git's lock file, as
		// it would index.lock: on the place's record (status and tidy
		// fail, naming it) or on its branch (tidy cannot clean the launch
		// up and names the lock). Remove it as an operator would, and tidy
		// again.
		refsBefore := f.git("-C", f.dir, "for-each-ref", "--format=%(refname) %(objectname)")
		if _, err := report.ReadStatus(ctx, env, report.StatusOptions{Repo: f.dir, All: true}); err != nil && !errors.Is(err, git.ErrLocked) {
			t.Fatalf("trial %d: status: %v", trial, err)
		}
		if after := f.git("-C", f.dir, "for-each-ref", "--format=%(refname) %(objectname)"); after != refsBefore {
			t.Fatalf("trial %d: status moved refs:\n%s\nwere\n%s", trial, after, refsBefore)
		}
		if _, err := tidyIn(ctx, env, f.dir); err != nil {
			if !strings.Contains(err.Error(), ".lock") {
				t.Fatalf("trial %d: tidy: %v", trial, err)
			}
			var locks []string
			for _, glob := range []string{"refs/flume/*/*.lock", "refs/heads/fix/*.lock"} {
				found, _ := filepath.Glob(filepath.Join(f.dir, ".git", filepath.FromSlash(glob)))
				locks = append(locks, found...)
			}
			for _, l := range locks {
				os.Remove(l)
			}
			outcomes["stale ref lock removed"] += len(locks)
			if _, err := tidyIn(ctx, env, f.dir); err != nil {
				t.Fatalf("trial %d: tidy after the locks went: %v", trial, err)
			}
		}
		st, err := report.ReadStatus(ctx, env, report.StatusOptions{Repo: f.dir, All: true})
		if err != nil {
			t.Fatalf("trial %d: status: %v", trial, err)
		}
		if len(st.Problems) > 0 {
			t.Fatalf("trial %d: status problems after the locks went: %+v", trial, st.Problems)
		}
		id := "fix--" + name
		var ps *report.PlaceStatus
		for i := range st.Places {
			if st.Places[i].Place == id {
				ps = &st.Places[i]
			}
		}
		wts := f.git("-C", f.dir, "worktree", "list", "--porcelain")
		hasWorktree := strings.Contains(wts, "places/"+id+"\n")
		_, branchErr := exec.Command("git", "-C", f.dir, "rev-parse", "--verify", "-q", "refs/heads/fix/"+name).Output()
		hasBranch := branchErr == nil
		switch {
		case ps == nil || ps.Phase == record.PhaseTidied:
			if hasWorktree || hasBranch {
				t.Fatalf("trial %d: place %s cleaned up but worktree=%v branch=%v", trial, id, hasWorktree, hasBranch)
			}
			if _, err := os.Lstat(filepath.Join(f.dir, "places", id)); err == nil {
				left, _ := os.ReadDir(filepath.Join(f.dir, "places", id))
				admin, _ := filepath.Glob(filepath.Join(f.dir, ".git", "worktrees", "*", "*"))
				t.Fatalf("trial %d: cleaned-up place left its folder holding %v (record %+v; git's worktrees/: %v)", trial, left, ps, admin)
			}
			outcomes["cleaned"]++
		case ps.Phase == record.PhaseMade:
			if !hasWorktree || !hasBranch || ps.Worktree != "present" {
				t.Fatalf("trial %d: place %s made but worktree=%v branch=%v", trial, id, hasWorktree, hasBranch)
			}
			if ps.Ready.Running {
				t.Fatalf("trial %d: readying still shown running after its process died", trial)
			}
			// Whole: a checkout a kill cut short is never kept as made.
			if out := f.git("-C", ps.Path, "status", "--porcelain"); out != "" {
				t.Fatalf("trial %d: made place %s is not clean: %q", trial, id, out)
			}
			if ps.Ready.OK {
				outcomes["made, ready"]++
			} else {
				outcomes["made, readying interrupted"]++
			}
		default:
			t.Fatalf("trial %d: place %s left in phase %q", trial, id, ps.Phase)
		}
	}
	t.Logf("outcomes of %d launches sent %v: %v", n, sig, outcomes)
	f.git("-C", f.dir, "fsck", "--no-dangling")
}
