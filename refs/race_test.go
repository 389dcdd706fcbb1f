package refs_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/git-flume/git-flume/refs"
)

// TestConcurrentIncrements_R3: 8 processes × 200 compare-and-swap increments
// of one record while another process loops `git pack-refs --all` end at
// exactly 1600.
func TestConcurrentIncrements_R3(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns thousands of git processes")
	}
	const procs, each = 8, 200
	r := newTestRepo(t)
	const ref = "refs/flume/counters/shared"

	packer := r.helperCmd("packrefs")
	packer.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := packer.Start(); err != nil {
		t.Fatal(err)
	}
	// End the packer and the git it runs before the folder is removed.
	defer func() { syscall.Kill(-packer.Process.Pid, syscall.SIGKILL); packer.Wait() }()

	var wg sync.WaitGroup
	errs := make([]error, procs)
	acked := make([]string, procs)
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := r.helperCmd("incr", ref, fmt.Sprint(each), fmt.Sprintf("p%d", i))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			acked[i] = string(out)
			if err != nil {
				errs[i] = fmt.Errorf("%v\n%s", err, stderr.String())
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	// Every increment a writer was told had landed is in the chain.
	chain := map[string]bool{}
	for _, id := range strings.Fields(r.git("-C", r.dir, "rev-list", ref)) {
		chain[id] = true
	}
	var lost []string
	for i, out := range acked {
		ids := strings.Fields(out)
		if len(ids) != each {
			t.Errorf("writer %d printed %d acknowledged commits, want %d", i, len(ids), each)
		}
		for _, id := range ids {
			if !chain[id] {
				lost = append(lost, fmt.Sprintf("p%d %s (%s)", i, id, r.git("-C", r.dir, "log", "-1", "--format=%s, parent %p", id)))
			}
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d acknowledged increments are not in the chain at %s:\n%s", len(lost), r.git("-C", r.dir, "rev-parse", ref), strings.Join(lost, "\n"))
	}
	rec, err := r.store().Read(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	var c counter
	if err := rec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.N != procs*each {
		t.Fatalf("counter = %d, want %d: updates were lost", c.N, procs*each)
	}
	// The chain holds one commit per increment: nothing was overwritten.
	if len(chain) != procs*each {
		t.Fatalf("chain length %d, want %d", len(chain), procs*each)
	}
}

// TestConcurrentCreateOneWins_R2: 8 processes racing to create one record:
// exactly one wins, the others get the conflict error.
func TestConcurrentCreateOneWins_R2(t *testing.T) {
	for round := range 5 {
		r := newTestRepo(t)
		ref := fmt.Sprintf("refs/flume/counters/race%d", round)
		codes := make([]int, 8)
		var start, wg sync.WaitGroup
		start.Add(1)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := r.helperCmd("create", ref, fmt.Sprintf("p%d", i))
				start.Wait()
				out, err := cmd.CombinedOutput()
				codes[i] = cmd.ProcessState.ExitCode()
				if err != nil && codes[i] != helperConflict {
					t.Errorf("creator %d: %v\n%s", i, err, out)
				}
			}()
		}
		start.Done()
		wg.Wait()
		wins, conflicts := 0, 0
		for _, c := range codes {
			switch c {
			case helperOK:
				wins++
			case helperConflict:
				conflicts++
			}
		}
		if wins != 1 || conflicts != 7 {
			t.Fatalf("round %d: %d wins, %d conflicts (codes %v); want 1 and 7", round, wins, conflicts, codes)
		}
	}
}

// TestKilledWriterLeavesReadableRef: a writer killed with SIGKILL (with its
// git children) at random points never leaves a torn, empty or unreadable
// ref. Run 50 times.
func TestKilledWriterLeavesReadableRef(t *testing.T) {
	if testing.Short() {
		t.Skip("kills 50 writers")
	}
	r := newTestRepo(t)
	s := r.store()
	ctx := context.Background()
	const ref = "refs/flume/counters/killed"
	staleLocks := 0
	last := 0
	for trial := range 50 {
		cmd := r.helperCmd("incr", ref, "100000", fmt.Sprintf("t%d", trial))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(30+rand.IntN(150)) * time.Millisecond)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()

		// The loose ref file, if there is one, is never empty or torn.
		if data, err := os.ReadFile(filepath.Join(r.dir, ".git", ref)); err == nil {
			if len(data) != 41 {
				t.Fatalf("trial %d: loose ref holds %q", trial, data)
			}
		}
		rec, err := s.Read(ctx, ref)
		if errors.Is(err, refs.ErrNotFound) && last == 0 {
			continue // no write has landed yet
		}
		if err != nil {
			t.Fatalf("trial %d: record unreadable: %v", trial, err)
		}
		var c counter
		if err := rec.Decode(&c); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if c.N < last {
			t.Fatalf("trial %d: counter went back from %d to %d", trial, last, c.N)
		}
		last = c.N
		// A kill inside `git update-ref` can leave git's own lock file;
		// git refuses to move the ref until someone removes it, exactly
		// as with index.lock. Count it and clear it as an operator would.
		lock := filepath.Join(r.dir, ".git", ref+".lock")
		if _, err := os.Stat(lock); err == nil {
			staleLocks++
			os.Remove(lock)
		}
	}
	t.Logf("50 kills: counter reached %d; %d kills left a stale .lock", last, staleLocks)
	if out, err := exec.Command("git", "-C", r.dir, "fsck", "--no-dangling").CombinedOutput(); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	if _, problems, err := s.List(ctx, refs.Prefix); err != nil || len(problems) > 0 {
		t.Fatalf("list after kills: %v %v", problems, err)
	}
}
