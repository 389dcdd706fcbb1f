package place_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/report"
	"github.com/git-flume/git-flume/stage/runenv"
)

// TestKilledLaunchLeavesNoLease_L1 kills launches of a repository with a
// [run] section (env file, two ports) at random points, as SIGKILL does:
// every lease left is either named by its made place or stale (its
// launcher gone), no two leases overlap, no copy cut short shows in a
// place, and the next launch takes a stale lease over.
func TestKilledLaunchLeavesNoLease_L1(t *testing.T) {
	if testing.Short() {
		t.Skip("kills launches")
	}
	n := 8
	if os.Getenv("FLUME_FULL_MATRIX") != "" {
		n = 20
	}
	f := newFixture(t)
	os.MkdirAll(filepath.Join(f.dir, ".flume"), 0o755)
	os.WriteFile(filepath.Join(f.dir, ".flume", "config"), []byte("[run]\n\tenv = .env\n\tport = PORT\n\tport = API_PORT\n\tportsFrom = 24100\n[ready]\n\tstep = sleep 0.05\n"), 0o644)
	os.WriteFile(filepath.Join(f.dir, ".gitignore"), []byte(".env\n"), 0o644)
	f.git("-C", f.dir, "add", ".")
	f.git("-C", f.dir, "commit", "-q", "-m", "run")
	os.WriteFile(filepath.Join(f.dir, ".env"), []byte("SECRET=x\n"), 0o644)
	ctx := context.Background()
	env := f.stageEnv(f.env)
	for trial := range n {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(append([]string{}, f.env...), "FLUME_STAGE_HELPER=launch", "FLUME_REPO="+f.dir, "FLUME_NAME="+fmt.Sprintf("k%02d", trial))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		checkLeases(t, f, env, trial)
	}
	stale := checkLeases(t, f, env, n)
	leases := f.git("-C", f.dir, "for-each-ref", "refs/flume/leases/")
	t.Logf("after %d killed launches: %d leases, %d stale", n, len(strings.Split(strings.TrimSpace(leases), "\n")), len(stale))
	// A stale block can be taken over only while its ports are free and its
	// ref unlocked: another program may hold a port, and a kill during a
	// takeover leaves the ref's lock (named by fsck). Either is a reason,
	// not a fault; a takeable stale block that stays stale is one.
	takeable := takeableStale(t, f, stale)
	env.PID = os.Getpid()
	p, err := place.MakePlace(ctx, env, f.dir, place.LaunchOptions{Kind: "fix", Name: "after", Brief: "b"})
	if err != nil {
		t.Fatalf("a launch after the kills: %v", err)
	}
	if p.Run == nil || len(p.Run.Ports) != 2 {
		t.Fatalf("the launch after the kills got no ports: %+v", p.Run)
	}
	if after := checkLeases(t, f, env, n+1); takeable > 0 && len(after) != len(stale)-1 {
		t.Fatalf("%d stale leases before the launch (%d takeable), %d after: it took none over", len(stale), takeable, len(after))
	}
}

// takeableStale counts the stale leases whose ports a bind probe finds
// free and whose refs no lock file holds.
func takeableStale(t *testing.T, f *fixture, stale map[string]runenv.Lease) int {
	t.Helper()
	n := 0
	for ref, l := range stale {
		if _, err := os.Stat(filepath.Join(f.dir, ".git", ref+".lock")); err == nil {
			t.Logf("stale lease %s: its ref is locked", ref)
			continue
		}
		if !bindable(l.First, l.Count) {
			t.Logf("stale lease %s: a port of it is in use", ref)
			continue
		}
		n++
	}
	return n
}

func bindable(first, count int) bool {
	for port := first; port < first+count; port++ {
		ln, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}

// checkLeases checks every lease of the fixture's repository and returns
// the stale ones by ref.
func checkLeases(t *testing.T, f *fixture, env *stage.Env, trial int) map[string]runenv.Lease {
	t.Helper()
	st, err := report.ReadStatus(context.Background(), env, report.StatusOptions{Repo: f.dir, All: true})
	if err != nil {
		t.Fatalf("trial %d: status: %v", trial, err)
	}
	named := map[string]string{}
	for _, ps := range st.Places {
		if ps.Phase == record.PhaseMade && ps.Run != nil && ps.Run.Lease != "" {
			named[ps.Run.Lease] = ps.Place
		}
		if ps.Phase == record.PhaseMade && ps.Worktree == "present" {
			// A made place is whole: nothing a kill cut short shows in it,
			// neither git's checkout nor what [run] copies.
			if out := f.git("-C", ps.Path, "status", "--porcelain"); out != "" {
				t.Fatalf("trial %d: place %s is not clean: %q", trial, ps.Place, out)
			}
		}
	}
	refsOut := f.git("-C", f.dir, "for-each-ref", "--format=%(refname)", "refs/flume/leases/")
	type block struct{ first, count int }
	var blocks []block
	stale := map[string]runenv.Lease{}
	for _, ref := range strings.Fields(refsOut) {
		var l runenv.Lease
		if err := json.Unmarshal([]byte(f.git("-C", f.dir, "cat-file", "-p", ref+":state.json")), &l); err != nil {
			t.Fatalf("trial %d: lease %s: %v", trial, ref, err)
		}
		for _, b := range blocks {
			if l.First < b.first+b.count && b.first < l.First+l.Count {
				t.Fatalf("trial %d: lease %s overlaps another at %d", trial, ref, b.first)
			}
		}
		blocks = append(blocks, block{l.First, l.Count})
		switch {
		case named[ref] == l.Place:
		case proc.Alive(l.PID):
			t.Fatalf("trial %d: lease %s of %s is named by no place while its launcher %d runs, after the kill", trial, ref, l.Place, l.PID)
		default:
			stale[ref] = l
		}
	}
	return stale
}

type crashed struct{}

// TestLaunchCrashedAtEveryRunStep_L1 stops a launch at each step of its
// [run] setup, as a kill would there: nothing it leased is left that the
// next launch does not take over, and the place it made is whole.
func TestLaunchCrashedAtEveryRunStep_L1(t *testing.T) {
	for _, point := range []string{"run:copied", "run:deps", "run:leased"} {
		t.Run(point, func(t *testing.T) {
			f := newFixture(t)
			os.MkdirAll(filepath.Join(f.dir, ".flume"), 0o755)
			os.WriteFile(filepath.Join(f.dir, ".flume", "config"), []byte("[run]\n\tenv = .env\n\tport = PORT\n\tportsFrom = 24200\n"+
				"\tdeps = node_modules\n\tdepsInstall = mkdir -p node_modules/x && echo 1 > node_modules/x/f\n"), 0o644)
			os.WriteFile(filepath.Join(f.dir, ".gitignore"), []byte(".env\nnode_modules\n"), 0o644)
			f.git("-C", f.dir, "add", ".")
			f.git("-C", f.dir, "commit", "-q", "-m", "run")
			os.WriteFile(filepath.Join(f.dir, ".env"), []byte("SECRET=x\n"), 0o644)
			ctx := context.Background()
			env := f.stageEnv(f.env)
			env.PID = 999999 // the launch that is stopped: a process gone
			env.Fault = func(p string) {
				if p == point {
					panic(crashed{})
				}
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						if _, ok := r.(crashed); !ok {
							panic(r)
						}
					}
				}()
				place.MakePlace(ctx, env, f.dir, place.LaunchOptions{Kind: "fix", Name: "cut", Brief: "b"})
				t.Fatalf("the launch was not stopped at %s", point)
			}()
			want := 0
			if point == "run:leased" {
				want = 1
			}
			if stale := checkLeases(t, f, env, 0); len(stale) != want {
				t.Fatalf("stopped at %s: %d stale leases, want %d", point, len(stale), want)
			}
			env.Fault, env.PID = nil, os.Getpid()
			p, err := place.MakePlace(ctx, env, f.dir, place.LaunchOptions{Kind: "fix", Name: "next", Brief: "b"})
			if err != nil {
				t.Fatal(err)
			}
			if stale := checkLeases(t, f, env, 1); len(stale) != 0 || p.Run.Ports["PORT"] != 24200 {
				t.Fatalf("the next launch: %d stale leases left, PORT=%d (want the first block, taken over)", len(stale), p.Run.Ports["PORT"])
			}
			if data, err := os.ReadFile(filepath.Join(p.Path, "node_modules", "x", "f")); err != nil || string(data) != "1\n" {
				t.Fatalf("the next launch's deps: %q %v", data, err)
			}
			finishCut(t, f, env, point)
		})
	}
}

// TestLeasesOfOneProcessNeverShare: 8 launches at once in one process (as
// the MCP server makes places) never share a port: a lease its place does
// not name yet is held while the process that took it runs, and that
// process may be the one leasing again.
func TestLeasesOfOneProcessNeverShare(t *testing.T) {
	f := newFixture(t)
	os.MkdirAll(filepath.Join(f.dir, ".flume"), 0o755)
	os.WriteFile(filepath.Join(f.dir, ".flume", "config"), []byte("[run]\n\tport = PORT\n\tport = API_PORT\n\tportsFrom = 24500\n"), 0o644)
	f.git("-C", f.dir, "add", ".")
	f.git("-C", f.dir, "commit", "-q", "-m", "run")
	env := f.stageEnv(f.env)
	type result struct {
		p   *record.Place
		err error
	}
	results := make(chan result, 8)
	for i := range 8 {
		go func() {
			p, err := place.MakePlace(context.Background(), env, f.dir, place.LaunchOptions{Kind: "fix", Name: fmt.Sprintf("c%d", i), Brief: "b"})
			results <- result{p, err}
		}()
	}
	seen := map[int]string{}
	for range 8 {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		for _, port := range r.p.Run.Ports {
			if other, ok := seen[port]; ok {
				t.Fatalf("port %d leased to %s and %s", port, other, r.p.ID)
			}
			seen[port] = r.p.ID
		}
	}
	if len(seen) != 16 {
		t.Fatalf("%d ports leased, want 16", len(seen))
	}
}

// finishCut checks that the place whose launch was cut at point says its
// [run] setup is unfinished, and that Finish (what a stage's start and
// env --refresh run) gives it everything.
func finishCut(t *testing.T, f *fixture, env *stage.Env, point string) {
	t.Helper()
	ctx := context.Background()
	repo, store, err := env.Open(ctx, f.dir)
	if err != nil {
		t.Fatal(err)
	}
	rec, cut, err := record.ReadPlace(ctx, store, "fix--cut")
	if err != nil {
		t.Fatal(err)
	}
	if lacking := runenv.Lacking(cut); cut.Run == nil || !cut.Run.Unfinished || lacking != "its [run] setup is unfinished" {
		t.Fatalf("cut at %s: the record says %+v (%q), want its setup unfinished", point, cut.Run, lacking)
	}
	cfg, err := stage.LoadConfig(ctx, env.Runner, repo, cut.Base, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runenv.Finish(ctx, env, repo, store, rec, cut, cfg.Run); err != nil {
		t.Fatal(err)
	}
	_, cut, err = record.ReadPlace(ctx, store, "fix--cut")
	if err != nil {
		t.Fatal(err)
	}
	if lacking := runenv.Lacking(cut); lacking != "" || cut.Run.Ports["PORT"] == 0 {
		t.Fatalf("cut at %s, then finished: %q, ports %v", point, lacking, cut.Run.Ports)
	}
	for _, file := range []string{".env", "node_modules/x/f"} {
		if _, err := os.Stat(filepath.Join(cut.Path, file)); err != nil {
			t.Errorf("cut at %s, then finished: %s: %v", point, file, err)
		}
	}
}
