package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/sandbox"
	"github.com/git-flume/git-flume/internal/sidedoor"
)

var update = flag.Bool("update", false, "rewrite testscript files with actual output")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		// `git flume …` inside a script finds this binary on PATH as
		// git-flume, so scripts run the real program.
		"git-flume": func() {
			// Crash tests name a point of an engine step where this
			// process kills itself (a test build only).
			if point := os.Getenv("FLUME_FAULT"); point != "" {
				faultHook = func(p string) {
					if p == point {
						syscall.Kill(os.Getpid(), syscall.SIGKILL)
					}
				}
			}
			// The timers' clock runs ahead of the real one by what the
			// script's `clock` commands added (a test build only).
			if path := os.Getenv("FLUME_TEST_CLOCK"); path != "" {
				clockHook = func() time.Time { return time.Now().Add(clockOffset(path)) }
			}
			os.Exit(run(context.Background(), os.Args, &streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Environ()))
		},
		"fake-claude": func() { fakeClaude(); os.Exit(0) },
		"mcp-client":  func() { os.Exit(mcpClient()) },
		// side-door NAME tries one side door out of an agent's boundary
		// (internal/sidedoor): exit 0 where it got through.
		"side-door": func() { os.Exit(sideDoor(os.Args[1:])) },
	})
}

func TestScript(t *testing.T) {
	requireTmux(t)
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("..", "..", "testdata", "script"),
		UpdateScripts:       *update,
		RequireUniqueNames:  true,
		RequireExplicitExec: false,
		Setup:               hermetic,
		Cmds:                scriptCmds,
		Condition:           scriptCondition,
	})
}

// scriptCondition knows [sshd]: the distribution's openssh-server is
// installed, for the scripts that run a second machine on a loopback port
// (required under CI). And [landlock]: the kernel can hold an agent's
// sandbox (A12). Under CI a kernel without it fails the suite: its
// scripts would otherwise show only the unsandboxed half. And [root]: the
// tests run as root, so a script may run a process as another user. And
// [view]: an agent gets its own view of the machine here (A13), so the
// view answers a write outside before Landlock does.
func scriptCondition(cond string) (bool, error) {
	if cond == "root" {
		return os.Geteuid() == 0, nil
	}
	if cond == "view" {
		return sandbox.ViewUnavailable() == "", nil
	}
	if cond == "sshd" {
		return sshdAvailable()
	}
	if cond != "landlock" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	why := sandbox.Unavailable()
	if why != "" && os.Getenv("CI") != "" {
		return false, fmt.Errorf("CI: %s; the sandbox scripts need a kernel with Landlock 3 or later", why)
	}
	return why == "", nil
}

// requireTmux fails the suite when tmux is missing: 44 scripts drive
// agents in tmux panes, and a `make test` that skipped them would pass
// while half the end-to-end suite never ran. A developer who
// means to run without it says so with FLUME_WITHOUT_TMUX=1, and is told
// what was left out.
func requireTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err == nil {
		return
	}
	const install = "install tmux (apt-get install tmux, dnf install tmux, brew install tmux); .ci/run installs it"
	if os.Getenv("FLUME_WITHOUT_TMUX") == "" {
		t.Fatal("tmux is not installed and the scripts that drive agents in panes need it: " + install +
			", or set FLUME_WITHOUT_TMUX=1 to run the others")
	}
	fmt.Fprintln(os.Stderr, "FLUME_WITHOUT_TMUX: the scripts that need tmux are skipped; "+install+" to run them")
}

// TestRealAgents runs the real agent programs (Claude Code, Codex, pi)
// against the fake model server: `make test-agents`, after the programs
// are installed under $FLUME_TOOLS (scripts/install-agents).
func TestRealAgents(t *testing.T) {
	if os.Getenv("FLUME_REAL_AGENTS") == "" {
		t.Skip("set FLUME_REAL_AGENTS=1 (make test-agents) to run the real agent programs")
	}
	testscript.Run(t, testscript.Params{
		Dir:                filepath.Join("..", "..", "testdata", "agents"),
		RequireUniqueNames: true,
		Setup: func(e *testscript.Env) error {
			err := hermetic(e)
			// Deferred after hermetic's cleanup, so run before it.
			e.Defer(func() { showScreensOnFailure(e) })
			return err
		},
		Cmds:      scriptCmds,
		Condition: scriptCondition,
	})
}

// showScreensOnFailure logs, for a real-agent script that failed, what the
// script's log cannot show: every pane of its tmux server as it is now and
// the end of the fake model's request log. A real program's screen is the
// evidence of why it did not do what the script expected.
func showScreensOnFailure(e *testscript.Env) {
	t, ok := e.T().(interface {
		Failed() bool
		Log(...any)
	})
	if !ok || !t.Failed() {
		return
	}
	sock := filepath.Join(e.WorkDir, ".tmux.sock")
	panes, _ := exec.Command("tmux", "-S", sock, "list-panes", "-a", "-F", "#{session_name} #{pane_id} #{pane_dead} #{pane_pid}").Output()
	for _, line := range strings.Split(strings.TrimSpace(string(panes)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		screen, _ := exec.Command("tmux", "-S", sock, "capture-pane", "-p", "-t", fields[1]).Output()
		t.Log("pane " + line + ":\n" + strings.TrimRight(string(screen), "\n"))
	}
	if model, err := os.ReadFile(filepath.Join(e.WorkDir, "model.log")); err == nil {
		t.Log("the fake model's log, its end:\n" + string(model[max(0, len(model)-4000):]))
	}
}

// hermetic gives every script its own HOME, XDG folders and git
// configuration, and fixes identities and dates, so nothing on the machine
// running the tests reaches the scripts.
func hermetic(e *testscript.Env) error {
	home := filepath.Join(e.WorkDir, "home")
	for _, d := range []string{home, filepath.Join(home, ".config"), filepath.Join(home, ".local", "share"), filepath.Join(home, ".local", "state"), filepath.Join(home, ".cache")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	vars := [][2]string{
		{"HOME", home},
		{"XDG_CONFIG_HOME", filepath.Join(home, ".config")},
		{"XDG_DATA_HOME", filepath.Join(home, ".local", "share")},
		{"XDG_STATE_HOME", filepath.Join(home, ".local", "state")},
		{"XDG_CACHE_HOME", filepath.Join(home, ".cache")},
		{"GIT_CONFIG_NOSYSTEM", "1"},
		{"GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig")},
		{"GIT_CONFIG_COUNT", "5"},
		{"GIT_CONFIG_KEY_0", "init.defaultBranch"}, {"GIT_CONFIG_VALUE_0", "main"},
		{"GIT_CONFIG_KEY_1", "core.autocrlf"}, {"GIT_CONFIG_VALUE_1", "false"},
		{"GIT_CONFIG_KEY_2", "commit.gpgsign"}, {"GIT_CONFIG_VALUE_2", "false"},
		{"GIT_CONFIG_KEY_3", "advice.detachedHead"}, {"GIT_CONFIG_VALUE_3", "false"},
		{"GIT_CONFIG_KEY_4", "protocol.file.allow"}, {"GIT_CONFIG_VALUE_4", "always"},
		{"GIT_AUTHOR_NAME", "Test Author"}, {"GIT_AUTHOR_EMAIL", "author@example.com"},
		{"GIT_COMMITTER_NAME", "Test Committer"}, {"GIT_COMMITTER_EMAIL", "committer@example.com"},
		{"GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z"}, {"GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z"},
		{"GIT_TERMINAL_PROMPT", "0"},
		{"GIT_EDITOR", "true"},
		{"LC_ALL", "C"},
		{"TZ", "UTC"},
		{"FLUME_NOW", "2026-01-01T00:00:00Z"},
		{"FLUME_HOST", "testhost"},
		// Scripts start agents only where they say so (FLUME_PANE=tmux,
		// on a private tmux socket).
		{"FLUME_PANE", "none"},
		{"FLUME_TMUX_SOCKET", filepath.Join(e.WorkDir, ".tmux.sock")},
		{"FLUME_WATCH_INTERVAL", "200ms"},
		// The engine's timers read this clock: `clock D` moves it on.
		{"FLUME_TEST_CLOCK", filepath.Join(e.WorkDir, ".clock")},
		// A delivered stage's agent gets this long to close its turn with
		// its report (60s by default), so scripts whose agents never close
		// one do not wait a minute.
		{"FLUME_REPORT_GRACE", "5s"},
	}
	for _, kv := range vars {
		e.Setenv(kv[0], kv[1])
	}
	// The repository's own files (plugins/), for scripts that check them.
	if src, err := filepath.Abs(filepath.Join("..", "..")); err == nil {
		e.Setenv("FLUME_SOURCE", src)
	}
	// Agents a script started end with it, passed or failed, and so does
	// whatever they left running outside their panes (Codex's app-server
	// daemon) and flume's watchers: every tmux server on a socket in the
	// script's folder, everything with the script's HOME or another HOME
	// it made there (a runner's machine: homeB).
	work := e.WorkDir
	e.Defer(func() {
		socks, _ := filepath.Glob(filepath.Join(work, "*.sock"))
		for _, sock := range append(socks, filepath.Join(work, ".tmux.sock")) {
			exec.Command("tmux", "-S", sock, "kill-server").Run()
		}
		homes, _ := filepath.Glob(filepath.Join(work, "home*"))
		for _, h := range append(homes, home) {
			for _, pid := range agent.ProcessesWithEnv("HOME=" + h) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return os.WriteFile(filepath.Join(home, ".gitconfig"), nil, 0o644)
}

// sideDoor tries the side doors named, as an agent's shell would run a
// program that opens them: 0 when every one got through, 1 with the
// kernel's answer otherwise.
func sideDoor(names []string) int {
	probes := sidedoor.Probes()
	for _, name := range names {
		err, ok := probes[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "side-door: no probe %q\n", name)
			return 2
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "side-door: %s: %v\n", name, err)
			return 1
		}
	}
	return 0
}
