package agent

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/git-flume/git-flume/agents/launchfile"
	"github.com/git-flume/git-flume/internal/proc"
)

// Tmux hosts agents in tmux sessions on flume's own server: one session per
// agent run, named after the place and stage (A2).
type Tmux struct {
	// Socket is the server's socket path; "" uses the server named
	// "flume" (tmux -L flume).
	Socket string
	// Launcher is the command that reads an agent's launch file (its
	// folder, command line and environment), enters its place and
	// executes it: git-flume agent-exec. Start adds the file.
	Launcher []string

	// running are the pane processes seen running (pane name → process
	// and its start time): while that process still runs, a look at the
	// pane asks /proc, not tmux, so a watcher spawns nothing while nothing
	// changes.
	running sync.Map
}

// paneProc is a pane's process as first seen: its pid and start time, so a
// pid the kernel gave to another process is never taken for it.
type paneProc struct {
	pid   int
	start string
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
	return proc.Cmd{Path: "tmux", Args: append(base, args...), Stdin: strings.NewReader(stdin), Env: tmuxEnv(os.Environ())}
}

// tmuxEnv is what a tmux client flume runs is given of environ, and so the
// server the first one starts, which keeps it for every window opened in
// it later: what tmux itself needs, never a key or flume's session (an
// agent's own environment reaches it through its launch file).
func tmuxEnv(environ []string) []string {
	return proc.KeepEnv(environ, "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TMUX_TMPDIR", "XDG_RUNTIME_DIR", "TZ", "LANG", "LC_*")
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
// exactly env as its environment. argv runs directly, never through a
// shell, and env never goes on a command line (the launcher reads it from
// a file only the user can read). The pane stays when its program ends, so
// how it ended can be read (Exited).
func (t *Tmux) Start(ctx context.Context, name, dir string, env, argv []string) (int, error) {
	if len(t.Launcher) == 0 {
		return 0, fmt.Errorf("tmux: no launcher to start %s with", name)
	}
	file, err := launchfile.Write(dir, env, argv)
	if err != nil {
		return 0, fmt.Errorf("write the agent's launch file: %w", err)
	}
	// -P -F: the new pane's pid comes back from the command that made it.
	// A second command may meet the server exiting because its last
	// session (an agent just ended) went, and answer nothing (found under
	// load). remain-on-exit is set in the same command list, before the
	// server reads the program's end.
	args := []string{"new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", name, "-x", "200", "-y", "50", "-c", dir, "--"}
	args = append(args, t.Launcher...)
	args = append(args, file, ";", "set-option", "-w", "-t", "="+name+":", "remain-on-exit", "on")
	out, err := t.run(ctx, args...)
	if err != nil {
		os.Remove(file)
		return 0, err
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(out)); err == nil && pid > 0 {
		return pid, nil
	}
	return t.PID(ctx, name)
}

// pane is what tmux says of a session's pane.
type pane struct {
	pid  int
	dead bool
	// known: the dead pane's status or signal was read; tmux closes a
	// pane's terminal as its program ends and reads how it ended a little
	// later, in between it is dead with neither.
	known          bool
	status, signal int
}

func (t *Tmux) pane(ctx context.Context, name string) (pane, error) {
	// Fields are separated by ":", since a dead pane leaves one of the
	// status and the signal empty.
	out, err := t.run(ctx, "display-message", "-p", "-t", "="+name+":", "#{pane_pid}:#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}")
	if err != nil {
		return pane{}, err
	}
	var p pane
	f := strings.Split(strings.TrimSpace(out), ":")
	for len(f) < 4 {
		f = append(f, "")
	}
	p.pid, _ = strconv.Atoi(f[0])
	p.dead = f[1] == "1"
	p.known = f[2] != "" || f[3] != ""
	p.status, _ = strconv.Atoi(f[2])
	p.signal, _ = strconv.Atoi(f[3])
	return p, nil
}

// PID returns the pid of the session's pane process, or an error when the
// session does not exist or has no running pane.
func (t *Tmux) PID(ctx context.Context, name string) (int, error) {
	p, err := t.pane(ctx, name)
	if err != nil {
		return 0, err
	}
	if p.pid <= 0 || p.dead {
		return 0, fmt.Errorf("tmux session %s has no running pane", name)
	}
	return p.pid, nil
}

// Alive reports whether the session exists and its process runs.
func (t *Tmux) Alive(ctx context.Context, name string) bool {
	_, ended := t.Exited(ctx, name)
	return !ended
}

// Exited says how the session's program ended (A10): its exit status or
// the signal that killed it, kept by remain-on-exit; or, when the session
// itself is gone (closed by hand, or the server ended), that its pane was
// closed. ok is false while the program runs.
func (t *Tmux) Exited(ctx context.Context, name string) (Exit, bool) {
	if v, ok := t.running.Load(name); ok {
		pp := v.(paneProc)
		if start, alive := proc.Started(pp.pid); alive && start == pp.start {
			return Exit{}, false
		}
		t.running.Delete(name)
	}
	p, err := t.pane(ctx, name)
	defer func() {
		if err == nil && !p.dead && p.pid > 0 {
			if start, alive := proc.Started(p.pid); alive {
				t.running.Store(name, paneProc{pid: p.pid, start: start})
			}
		}
	}()
	switch {
	case err != nil && t.listed(ctx, name):
		return Exit{}, false // a failed look, not a gone pane
	case err != nil:
		return Exit{Closed: true}, true
	case p.dead && p.known && p.signal > 0:
		return Exit{Signal: p.signal}, true
	case p.dead && p.known:
		return Exit{Status: p.status}, true
	case p.pid <= 0:
		return Exit{Closed: true}, true
	case proc.Alive(p.pid):
		return Exit{}, false
	}
	// The program has ended and tmux has not read how yet: the kernel
	// keeps its wait status until tmux reaps it.
	if status, signal, ok := proc.Exited(p.pid); ok {
		return Exit{Status: status, Signal: signal}, true
	}
	if procExists(p.pid) {
		return Exit{}, false // ending: how, the next look says
	}
	// Reaped: tmux read how it ended, perhaps since it was asked.
	if q, err := t.pane(ctx, name); err == nil && q.dead && q.known {
		return Exit{Status: q.status, Signal: q.signal}, true
	}
	return Exit{Closed: true}, true // only that it is gone is known
}

// listed reports whether a session named name may still be there: the
// server lists it, or could not be asked for a reason other than that it
// has no server (a server that is gone took its panes with it). A pane is
// called gone, and its agent ended, only on that evidence.
func (t *Tmux) listed(ctx context.Context, name string) bool {
	out, err := t.run(ctx, "list-sessions", "-F", "#{session_name}")
	if err != nil {
		// No server: the socket is gone or refuses connections.
		return t.serverUp()
	}
	for l := range strings.SplitSeq(out, "\n") {
		if l == name {
			return true
		}
	}
	return false
}

// serverUp reports whether flume's tmux server's socket accepts a
// connection.
func (t *Tmux) serverUp() bool {
	path := t.Socket
	if path == "" {
		path = filepath.Join(cmp.Or(os.Getenv("TMUX_TMPDIR"), "/tmp"), fmt.Sprintf("tmux-%d", os.Getuid()), "flume")
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// procExists reports whether pid is still a process, a zombie not yet
// reaped included.
func procExists(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// Capture returns the visible text of the session's pane: the program's,
// without the notice remain-on-exit writes under it when it ends ("Pane is
// dead (status 3, <date>)").
func (t *Tmux) Capture(ctx context.Context, name string) (string, error) {
	out, err := t.run(ctx, "capture-pane", "-p", "-t", "="+name+":")
	text := strings.TrimRight(out, " \n")
	if i := strings.LastIndexByte(text, '\n'); strings.HasPrefix(text[i+1:], "Pane is dead (") {
		out = text[:i+1]
	}
	return out, err
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
// A pane whose program already ended only has its session closed.
func (t *Tmux) Kill(ctx context.Context, name string) error {
	p, err := t.pane(ctx, name)
	if err != nil {
		return nil // no such session: nothing runs
	}
	if p.dead || p.pid <= 0 {
		_, _ = t.run(ctx, "kill-session", "-t", "="+name) // its program is gone; the session is only its remains
		return nil
	}
	pid := p.pid
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
	_, _ = t.run(ctx, "kill-session", "-t", "="+name) // what matters is checked next: the process is gone
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

// Exit is how an agent's program ended by itself, as its pane host saw it
// (A10).
type Exit struct {
	// Closed: the pane itself went (closed by hand, or its host ended), so
	// how the program ended is not known.
	Closed bool `json:"closed,omitempty"`
	Status int  `json:"status,omitempty"`
	Signal int  `json:"signal,omitempty"`
}

// String says how the program ended, as a reason reads it.
func (e Exit) String() string {
	switch {
	case e.Closed:
		return "its pane is gone (closed by hand, or its pane host ended)"
	case e.Signal > 0:
		name := syscall.Signal(e.Signal).String()
		return fmt.Sprintf("it was killed by signal %d (%s)", e.Signal, name)
	}
	return fmt.Sprintf("it exited with status %d", e.Status)
}

// Exiter is a pane host that can say how a pane's program ended.
type Exiter interface {
	Exited(ctx context.Context, name string) (Exit, bool)
}

var _ Exiter = (*Tmux)(nil)

// HowEnded says how the agent in pane ended; ok is false while it runs. A
// host that cannot tell more reports the pane gone.
func HowEnded(ctx context.Context, panes PaneHost, pane string) (Exit, bool) {
	if x, ok := panes.(Exiter); ok {
		return x.Exited(ctx, pane)
	}
	if panes.Alive(ctx, pane) {
		return Exit{}, false
	}
	return Exit{Closed: true}, true
}

// EndScreen is what an ended agent's pane last showed: its last three
// lines with a word in them (a letter or a digit: not a blank line, a
// border or a bare prompt), joined, clipped from the front; "" when the
// host kept nothing (a host leaves out its own notice of the end). A
// program that ends before it writes a transcript (a refused key, an
// unknown flag, a crash at start) leaves its reason there and nowhere
// else. The text is the program's: untrusted, to be printed escaped.
func EndScreen(ctx context.Context, panes PaneHost, pane string) string {
	text, err := panes.Capture(ctx, pane)
	if err != nil {
		return ""
	}
	var lines []string
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.TrimSpace(l); hasWord(l) {
			lines = append(lines, l)
		}
	}
	s := strings.Join(lines[max(0, len(lines)-3):], " / ")
	if r := []rune(s); len(r) > endScreenRunes {
		s = "…" + string(r[len(r)-endScreenRunes:])
	}
	return s
}

const endScreenRunes = 240

func hasWord(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

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
	c.Stdin, c.Stdout, c.Stderr, c.Env = term.In, term.Out, term.Err, nil
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
