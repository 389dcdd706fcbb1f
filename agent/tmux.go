package agent

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/git-flume/git-flume/internal/proc"
)

// Tmux hosts agents in tmux sessions on flume's own server: one session per
// agent run, named after the place and stage (A2).
type Tmux struct {
	// Socket is the server's socket path; "" uses the server named
	// "flume" (tmux -L flume).
	Socket string
}

// Check finds tmux on environ's PATH (git-flume runs tmux with its own
// environment, which is the caller's).
func (t *Tmux) Check(ctx context.Context, environ []string) error {
	if _, err := proc.LookPath("tmux", environ); err != nil {
		return fmt.Errorf("the pane host tmux is not on PATH (install it: apt-get install tmux, or brew install tmux; or pass --pane print to run the agent yourself)")
	}
	return nil
}

func (t *Tmux) cmd(stdin string, args ...string) proc.Cmd {
	base := []string{"-L", "flume"}
	if t.Socket != "" {
		base = []string{"-S", t.Socket}
	}
	return proc.Cmd{Path: "tmux", Args: append(base, args...), Stdin: strings.NewReader(stdin)}
}

func (t *Tmux) run(ctx context.Context, args ...string) (string, error) {
	return t.runIn(ctx, "", args...)
}

// runIn runs a tmux command with stdin as its input.
func (t *Tmux) runIn(ctx context.Context, stdin string, args ...string) (string, error) {
	out, err := proc.Output(ctx, t.cmd(stdin, args...))
	if err != nil {
		return out, fmt.Errorf("tmux %s: %w", args[0], err)
	}
	return out, nil
}

// Start runs argv in a new detached session named name, in dir, with
// exactly env as its environment. argv runs directly, never through a shell.
func (t *Tmux) Start(ctx context.Context, name, dir string, env, argv []string) (int, error) {
	// -P -F: the new pane's pid comes back from the command that made it.
	// A second command may meet the server exiting because its last
	// session (an agent just ended) went, and answer nothing (found under
	// load).
	args := []string{"new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", name, "-x", "200", "-y", "50", "-c", dir, "--", "env", "-i"}
	args = append(args, env...)
	args = append(args, argv...)
	out, err := t.run(ctx, args...)
	if err != nil {
		return 0, err
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(out)); err == nil && pid > 0 {
		return pid, nil
	}
	return t.PID(ctx, name)
}

// PID returns the pid of the session's pane process, or an error when the
// session does not exist or has no running pane.
func (t *Tmux) PID(ctx context.Context, name string) (int, error) {
	out, err := t.run(ctx, "display-message", "-p", "-t", "="+name+":", "#{pane_pid}")
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("tmux session %s has no running pane (pane_pid %q)", name, strings.TrimSpace(out))
	}
	return pid, nil
}

// Alive reports whether the session exists and its process runs.
func (t *Tmux) Alive(ctx context.Context, name string) bool {
	pid, err := t.PID(ctx, name)
	return err == nil && proc.Alive(pid)
}

// Capture returns the visible text of the session's pane.
func (t *Tmux) Capture(ctx context.Context, name string) (string, error) {
	return t.run(ctx, "capture-pane", "-p", "-t", "="+name+":")
}

// Send types text literally, then Enter as a key of its own after a pause:
// an Enter inside a fast burst is taken as a newline by some programs (A3).
func (t *Tmux) Send(ctx context.Context, name, text string) error {
	if strings.Contains(text, "\n") {
		// Several lines go as one bracketed paste, never ending in a
		// newline, so no line is submitted on its own.
		buf := "flume-" + name
		if _, err := t.runIn(ctx, strings.TrimRight(text, "\n"), "load-buffer", "-b", buf, "-"); err != nil {
			return err
		}
		if _, err := t.run(ctx, "paste-buffer", "-p", "-d", "-b", buf, "-t", "="+name+":"); err != nil {
			return err
		}
	} else if _, err := t.run(ctx, "send-keys", "-t", "="+name+":", "-l", "--", text); err != nil {
		return err
	}
	// Programs take an Enter that follows a paste too closely as part of
	// it (Claude Code absorbs it; Codex makes it a newline): wait longer
	// after a paste.
	pause := 300 * time.Millisecond
	if strings.Contains(text, "\n") {
		pause = time.Second
	}
	time.Sleep(pause)
	_, err := t.run(ctx, "send-keys", "-t", "="+name+":", "Enter")
	return err
}

// SendKeys sends named keys (such as "Enter").
func (t *Tmux) SendKeys(ctx context.Context, name string, keys ...string) error {
	_, err := t.run(ctx, append([]string{"send-keys", "-t", "=" + name + ":"}, keys...)...)
	return err
}

// Kill ends the session's process tree and verifies it exited (A5, X5).
func (t *Tmux) Kill(ctx context.Context, name string) error {
	pid, err := t.PID(ctx, name)
	if err != nil {
		return nil // no such session: nothing runs
	}
	// The pane's process leads its own process group: end the group.
	syscall.Kill(-pid, syscall.SIGTERM)
	syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 50 && proc.Alive(pid); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if proc.Alive(pid) {
		syscall.Kill(-pid, syscall.SIGKILL)
		syscall.Kill(pid, syscall.SIGKILL)
		waitGone(func() bool { return proc.Alive(pid) })
	}
	t.run(ctx, "kill-session", "-t", "="+name)
	if proc.Alive(pid) {
		return fmt.Errorf("agent process %d did not exit", pid)
	}
	return nil
}

// PaneHost runs agents in panes a person can look at (A2): tmux here; herdr
// implements the same.
type PaneHost interface {
	// Start runs argv in a new pane named name, in dir, with exactly env.
	Start(ctx context.Context, name, dir string, env, argv []string) (int, error)
	// Alive reports whether the pane's program runs.
	Alive(ctx context.Context, name string) bool
	// Capture returns the pane's visible text.
	Capture(ctx context.Context, name string) (string, error)
	// Send types text as a prompt: literally, then Enter as its own key.
	Send(ctx context.Context, name, text string) error
	// SendKeys sends named keys.
	SendKeys(ctx context.Context, name string, keys ...string) error
	// Kill ends the pane's process tree and verifies it exited.
	Kill(ctx context.Context, name string) error
	// Check says what keeps the host from starting panes here, and how to
	// get it; nil when it can.
	Check(ctx context.Context, environ []string) error
}

var _ PaneHost = (*Tmux)(nil)

// Terminal is a person's terminal: what attaching to a pane reads and
// writes, and the environment the pane host's client runs with.
type Terminal struct {
	In       io.Reader
	Out, Err io.Writer
	Env      []string
}

// Attacher is a pane host a person can attach a terminal to, to see an
// agent and answer it in its own pane.
type Attacher interface {
	Attach(ctx context.Context, name string, term Terminal) error
}

var _ Attacher = (*Tmux)(nil)

// Attach attaches term to the pane's session until the person detaches
// (C-b d). Flume's panes are on flume's own server, so a terminal already
// inside tmux attaches to that server too, without nesting checks.
func (t *Tmux) Attach(ctx context.Context, name string, term Terminal) error {
	c := t.cmd("", "attach-session", "-t", "="+name)
	c.Stdin, c.Stdout, c.Stderr = term.In, term.Out, term.Err
	for _, kv := range term.Env {
		if !strings.HasPrefix(kv, "TMUX=") {
			c.Env = append(c.Env, kv)
		}
	}
	if err := proc.Run(ctx, c); err != nil {
		return fmt.Errorf("tmux attach-session -t %s: %w", name, err)
	}
	return nil
}
