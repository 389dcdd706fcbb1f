package proc_test

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/proc"
)

// TestOnlyProcAndGitStartPrograms_R9_X4: os/exec is imported by internal/proc
// (every program but git) and internal/git (git, R9) and by no other
// package's code, so the environment of everything flume starts is decided
// in those two places. Tests may start what they like.
func TestOnlyProcAndGitStartPrograms_R9_X4(t *testing.T) {
	root := filepath.Join("..", "..")
	allowed := map[string]bool{filepath.Join("internal", "proc"): true, filepath.Join("internal", "git"): true}
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "os/exec" && !allowed[rel] {
				t.Errorf("%s imports os/exec: start programs through internal/proc (or git through internal/git)", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d Go files found under %s: the walk is not seeing the module", checked, root)
	}
}

// TestStepEnvKeepsOnlyItsFour_X4: a repository step gets PATH, HOME, LANG
// and TERM of the caller and what flume adds, nothing else: not a hook's
// GIT_DIR, not a secret, not the agent session's variables.
func TestStepEnvKeepsOnlyItsFour_X4(t *testing.T) {
	caller := []string{"PATH=/bin", "HOME=/h", "LANG=C.UTF-8", "TERM=xterm", "GIT_DIR=/elsewhere/.git",
		"AWS_SECRET_ACCESS_KEY=x", "FLUME_SESSION=s", "GIT_INDEX_FILE=/i", "LD_PRELOAD=/evil.so"}
	got := strings.Join(proc.StepEnv(caller, "FLUME_PLACE=fix--one"), " ")
	if want := "PATH=/bin HOME=/h LANG=C.UTF-8 TERM=xterm FLUME_PLACE=fix--one"; got != want {
		t.Fatalf("step environment %q, want %q", got, want)
	}
}

// TestRunSaysHowAProgramEnded: an exit status is an *ExitError with the
// code; a program not on PATH is ErrNotFound and no exit code.
func TestRunSaysHowAProgramEnded(t *testing.T) {
	ctx := context.Background()
	if err := proc.Run(ctx, proc.Cmd{Path: "sh", Args: []string{"-c", "exit 7"}}); proc.ExitCode(err) != 7 {
		t.Fatalf("exit 7: %v (code %d)", err, proc.ExitCode(err))
	}
	err := proc.Run(ctx, proc.Cmd{Path: "no-such-program-flume"})
	if !errors.Is(err, proc.ErrNotFound) || proc.ExitCode(err) != -1 {
		t.Fatalf("missing program: %v (code %d)", err, proc.ExitCode(err))
	}
	if out, err := proc.Output(ctx, proc.Cmd{Path: "sh", Args: []string{"-c", "echo out; echo why >&2; exit 3"}}); out != "out\n" || err == nil || !strings.Contains(err.Error(), "exit status 3: why") {
		t.Fatalf("output %q, error %v", out, err)
	}
}

// TestAliveIsFalseForAZombie: a child that exited but was not reaped has
// ended (liveness of claims, watchers and agents is decided here, K1).
func TestAliveIsFalseForAZombie(t *testing.T) {
	if !proc.Alive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	p, err := os.StartProcess("/bin/sh", []string{"sh", "-c", "exit 0"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Wait()
	for i := 0; i < 200; i++ {
		if !proc.Alive(p.Pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d exited (a zombie until reaped) but reads as alive", p.Pid)
}

// TestExitedReadsAZombiesWaitStatus_A10: a child that ended and was not
// reaped yet says how it ended, exit status or signal; a running process
// and one that is gone say nothing.
func TestExitedReadsAZombiesWaitStatus_A10(t *testing.T) {
	for _, c := range []struct {
		script         string
		status, signal int
	}{
		{"exit 3", 3, 0},
		{"exit 0", 0, 0},
		{"kill -9 $$", 0, 9},
		{"kill -15 $$", 0, 15},
	} {
		t.Run(c.script, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", c.script)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			deadline := time.Now().Add(10 * time.Second)
			status, signal, ok := proc.Exited(pid)
			for !ok && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
				status, signal, ok = proc.Exited(pid)
			}
			if !ok || status != c.status || signal != c.signal {
				t.Errorf("Exited(%d) = %d, %d, %v; want %d, %d, true", pid, status, signal, ok, c.status, c.signal)
			}
			cmd.Wait()
			if _, _, ok := proc.Exited(pid); ok {
				t.Error("a reaped process still reads as a zombie")
			}
		})
	}
	if _, _, ok := proc.Exited(os.Getpid()); ok {
		t.Error("a running process reads as ended")
	}
}

// TestParentAndGetenv: a process's parent and the environment it started
// with are read from /proc, which is how a command finds the agent session
// it runs in (R8).
func TestParentAndGetenv(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.Env = []string{"FLUME_SESSION=s-1", "OTHER=x"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	// The parent resumes while the child's exec is still setting up its
	// new memory, where /proc shows no environment yet: wait for it.
	for i := 0; i < 200; i++ {
		if _, ok := proc.Getenv(pid, "OTHER"); ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	ppid, comm, ok := proc.Parent(pid)
	if !ok || ppid != os.Getpid() || comm != "sleep" {
		t.Errorf("Parent(%d) = %d, %q, %v; want %d, sleep, true", pid, ppid, comm, ok, os.Getpid())
	}
	if v, ok := proc.Getenv(pid, "FLUME_SESSION"); !ok || v != "s-1" {
		t.Errorf("Getenv FLUME_SESSION = %q, %v; want s-1", v, ok)
	}
	if _, ok := proc.Getenv(pid, "FLUME"); ok {
		t.Error("Getenv FLUME matched a longer name")
	}
	if pids := proc.WithEnv("FLUME_SESSION=s-1"); len(pids) != 1 || pids[0] != pid {
		t.Errorf("WithEnv = %v, want [%d]", pids, pid)
	}
}

// TestRunStepExitsAsAShellWould_X4: a step's exit status is its own; a
// program that cannot be found exits 127 with the reason in its output, as
// in a shell; only a step that did not exit by itself (cancelled) is an
// error.
func TestRunStepExitsAsAShellWould_X4(t *testing.T) {
	var out strings.Builder
	ctx := context.Background()
	if code, err := proc.RunStep(ctx, proc.Cmd{Path: "sh", Args: []string{"-c", "exit 3"}, Env: os.Environ()}); code != 3 || err != nil {
		t.Fatalf("exit 3: %d %v", code, err)
	}
	if code, err := proc.RunStep(ctx, proc.Cmd{Path: "no-such-program-here", Env: os.Environ(), Stderr: &out}); code != proc.NotFound || err != nil || !strings.Contains(out.String(), "no-such-program-here") {
		t.Fatalf("not found: %d %v %q", code, err, out.String())
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if code, err := proc.RunStep(cancelled, proc.Cmd{Path: "sleep", Args: []string{"5"}, Env: os.Environ()}); code != -1 || err == nil {
		t.Fatalf("cancelled: %d %v", code, err)
	}
}

// TestKeepEnvKeepsWhatItNames: exact names, and every variable a name
// ending in "*" begins; nothing else, in environ's order.
func TestKeepEnvKeepsWhatItNames(t *testing.T) {
	environ := []string{"LC_ALL=C", "ANTHROPIC_API_KEY=k", "PATH=/bin", "LCX=1", "LC_TIME=en", "HOME=/h"}
	if got := strings.Join(proc.KeepEnv(environ, "PATH", "HOME", "LC_*"), " "); got != "LC_ALL=C PATH=/bin LC_TIME=en HOME=/h" {
		t.Errorf("KeepEnv = %q", got)
	}
}

// TestCleanGitEnv: R9, the variables that would point git at another
// repository go; the rest stay.
func TestCleanGitEnv(t *testing.T) {
	in := []string{"PATH=/bin", "GIT_DIR=/x", "GIT_WORK_TREE=/y", "GIT_INDEX_FILE=/i", "GIT_OBJECT_DIRECTORY=/o", "GIT_COMMON_DIR=/c", "GIT_AUTHOR_NAME=n", "GIT_DIRX=keep"}
	got := strings.Join(proc.CleanGitEnv(in), " ")
	if got != "PATH=/bin GIT_AUTHOR_NAME=n GIT_DIRX=keep" {
		t.Fatalf("CleanGitEnv = %s", got)
	}
}

// TestRunStepEndsItsWholeGroup_Q4_X4: a step whose time is up is ended with
// every process it started, not its first alone, and returns at once,
// though a child still held its output open (issue 61: a hung check held
// the lander for ever).
func TestRunStepEndsItsWholeGroup_Q4_X4(t *testing.T) {
	dir := t.TempDir()
	child := filepath.Join(dir, "child")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	code, err := proc.RunStep(ctx, proc.Cmd{Path: "/bin/sh", Args: []string{"-c", "sleep 60 & echo $! > " + child + "; wait"}, Stdout: &strings.Builder{}})
	if err == nil || code != -1 {
		t.Fatalf("a step past its time: exit %d, %v; want -1 and an error", code, err)
	}
	if took := time.Since(start); took > proc.GroupWait {
		t.Fatalf("it returned after %s", took)
	}
	data, err := os.ReadFile(child)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	deadline := time.Now().Add(5 * time.Second)
	for proc.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("its child %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
