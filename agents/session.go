package agent

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/git-flume/git-flume/agents/launchfile"
	"github.com/git-flume/git-flume/internal/proc"
)

// SessionProcesses returns the processes whose environment carries
// FLUME_SESSION=session: the agent flume started and everything it started,
// daemons that left its process group included (Codex's app-server).
func SessionProcesses(session string) []int {
	if session == "" {
		return nil
	}
	return ProcessesWithEnv("FLUME_SESSION=" + session)
}

// ProcessesWithEnv returns the live processes (this one aside) whose
// environment holds the variable assignment kv exactly.
func ProcessesWithEnv(kv string) []int { return proc.WithEnv(kv) }

// End ends an agent run and verifies it gone (X5): the process tree of its
// pane when flume hosts it (panes may be nil for a "print" pane), then
// every process that carries its session: what left the pane's process
// group, and the agent an operator started from a printed command. The
// stage engine and the workspace worker both end their agents here.
func End(ctx context.Context, panes PaneHost, pane, session string) error {
	launchfile.MarkEnding(session)
	if pane != "print" {
		if err := panes.Kill(ctx, pane); err != nil {
			return err
		}
	}
	return KillSession(session)
}

// KillSession ends every process of an agent session and verifies none is
// left (A5, X5).
func KillSession(session string) error {
	pids := SessionProcesses(session)
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	for i := 0; i < 50 && len(SessionProcesses(session)) > 0; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range SessionProcesses(session) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	waitGone(func() bool { return len(SessionProcesses(session)) > 0 })
	if left := SessionProcesses(session); len(left) > 0 {
		return fmt.Errorf("agent session %s: processes %v did not exit", session, left)
	}
	return nil
}

// CallerEnv is the part of a caller's environment an agent gets (A1): its
// API keys and PATH, without the GIT_DIR family that would point the agent
// at another repository (R9), tmux's own variables, or the markers of the
// agent or place the caller runs in.
func CallerEnv(caller []string) []string {
	var env []string
	for _, kv := range proc.CleanGitEnv(caller) {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		// An agent started from inside another agent's tool call (a
		// delegated place's) must not inherit that agent's
		// markers: Claude Code refuses to start "inside another Claude
		// Code session", and one that sees CLAUDE_CODE_CHILD_SESSION or
		// the outer CLAUDE_CODE_SESSION_ID writes no transcript of its
		// own, so its prompt could never be confirmed (A3).
		case name == "CLAUDECODE", strings.HasPrefix(name, "CLAUDE_CODE_SSE"), name == "CLAUDE_CODE_ENTRYPOINT",
			name == "CLAUDE_CODE_CHILD_SESSION", name == "CLAUDE_CODE_SESSION_ID", name == "CLAUDE_CODE_EXECPATH", name == "AI_AGENT",
			name == "TMUX", name == "TMUX_PANE",
			name == "FLUME_PLACE", name == "FLUME_STAGE", name == "FLUME_SESSION", name == "FLUME_SANDBOX",
			name == "FLUME_WORKSPACE", name == "FLUME_REPOSITORIES", name == "FLUME_INPUTS":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// HomeOf is HOME in an environment list, or "".
func HomeOf(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			return v
		}
	}
	return ""
}

// waitGone polls, for up to killWait, until alive reports nothing left. A
// SIGKILLed process is gone only once the kernel has run it to its end,
// which on a loaded machine takes longer than any fixed pause: slow is not
// failed, and a stop is verified, never assumed (X5).
func waitGone(alive func() bool) {
	deadline := time.Now().Add(killWait)
	for alive() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// killWait bounds how long a SIGKILLed process may take to vanish. A
// Claude Code process (Node, hundreds of megabytes) took seconds on a
// slow CI machine running three such agents (DESIGN.md, "Figures from
// code comments"): the delegate's accept then failed on a stop that did
// happen. The bound only matters for a process that never goes (X5).
const killWait = 10 * time.Second
