package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
)

// Herdr hosts agents in herdr panes (A2, O3), over herdr's socket API:
// newline-delimited JSON requests {"id", "method", "params"} on a Unix
// socket, answered by {"id", "result"} or {"id", "error": {"code",
// "message"}}. Each pane is a workspace of its own, labelled with the pane
// name; which herdr pane a name has is kept in State, so any flume
// process finds it again.
type Herdr struct {
	// Socket is herdr's socket: $HERDR_SOCKET_PATH, else
	// ~/.config/herdr/herdr.sock.
	Socket string
	// State is a folder where the pane of each name is kept.
	State string
	// PromptWait bounds the wait for a new pane's shell prompt.
	PromptWait time.Duration

	seq atomic.Int64
}

// HerdrFrom is the herdr that environment vars name: its socket
// $HERDR_SOCKET_PATH, else ~/.config/herdr/herdr.sock; its panes kept
// under $XDG_STATE_HOME/flume/herdr.
func HerdrFrom(vars map[string]string) *Herdr {
	home := vars["HOME"]
	sock := vars["HERDR_SOCKET_PATH"]
	if sock == "" {
		sock = filepath.Join(home, ".config", "herdr", "herdr.sock")
	}
	state := vars["XDG_STATE_HOME"]
	if state == "" {
		state = filepath.Join(home, ".local", "state")
	}
	return &Herdr{Socket: sock, State: filepath.Join(state, "flume", "herdr")}
}

// DefaultPane is where agents run unless a command says otherwise, from
// environment vars: $FLUME_PANE; else herdr when flume runs inside a
// herdr pane (herdr gives every process it starts HERDR_ENV=1 and its
// socket), so that a herdr user's agents appear beside them there; else
// "" (tmux).
func DefaultPane(vars map[string]string) string {
	if p := vars["FLUME_PANE"]; p != "" {
		return p
	}
	if vars["HERDR_ENV"] == "1" && vars["HERDR_SOCKET_PATH"] != "" {
		return "herdr"
	}
	return ""
}

var _ PaneHost = (*Herdr)(nil)

// Check finds herdr's socket: herdr must be running for flume to open
// panes in it.
func (h *Herdr) Check(ctx context.Context, environ []string) error {
	if info, err := os.Stat(h.Socket); err != nil || info.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("the pane host herdr is not running: no socket at %s (start herdr, set HERDR_SOCKET_PATH, or pass --pane tmux)", h.Socket)
	}
	return nil
}

// HerdrError is an error herdr answered with.
type HerdrError struct {
	Method, Code, Message string
}

func (e *HerdrError) Error() string {
	return fmt.Sprintf("herdr %s: %s: %s", e.Method, e.Code, e.Message)
}

// Call sends one request and decodes its result into result (if not nil).
func (h *Herdr) Call(ctx context.Context, method string, params, result any) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", h.Socket)
	if err != nil {
		return fmt.Errorf("herdr at %s: %w", h.Socket, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	} else {
		conn.SetDeadline(time.Now().Add(30 * time.Second))
	}
	id := fmt.Sprintf("flume_%d", h.seq.Add(1))
	req, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	if _, err := conn.Write(append(req, '\n')); err != nil {
		return fmt.Errorf("herdr %s: %w", method, err)
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("herdr %s: no answer: %w", method, err)
	}
	var resp struct {
		ID     string          `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return fmt.Errorf("herdr %s: %w", method, err)
	}
	if resp.Error != nil {
		return &HerdrError{Method: method, Code: resp.Error.Code, Message: resp.Error.Message}
	}
	if result != nil {
		return json.Unmarshal(resp.Result, result)
	}
	return nil
}

type herdrPane struct {
	Workspace string `json:"workspace_id"`
	Pane      string `json:"pane_id"`
	Agent     bool   `json:"agent"` // started with agent.start
	Program   string `json:"program"`
}

func (h *Herdr) stateFile(name string) string { return filepath.Join(h.State, name+".json") }

func (h *Herdr) pane(name string) (herdrPane, error) {
	var p herdrPane
	data, err := os.ReadFile(h.stateFile(name))
	if err != nil {
		return p, fmt.Errorf("herdr pane %s: %w", name, err)
	}
	return p, json.Unmarshal(data, &p)
}

// herdrKinds are the agent kinds herdr starts itself.
var herdrKinds = map[string]bool{"claude": true, "codex": true, "pi": true}

// hasControl reports whether s holds a control character, which herdr
// refuses in an agent's arguments.
func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// Start makes a workspace for the pane in dir with exactly env, waits for
// its shell prompt, starts argv there with no control characters in its
// arguments (a prompt that has some is sent after, as a prompt), and keeps
// which pane the name has.
func (h *Herdr) Start(ctx context.Context, name, dir string, env, argv []string) (int, error) {
	envMap := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		envMap[k] = v
	}
	var created struct {
		Workspace struct {
			ID string `json:"workspace_id"`
		} `json:"workspace"`
		RootPane struct {
			ID string `json:"pane_id"`
		} `json:"root_pane"`
	}
	if err := h.Call(ctx, "workspace.create", map[string]any{"cwd": dir, "label": name, "env": envMap, "focus": false}, &created); err != nil {
		return 0, err
	}
	p := herdrPane{Workspace: created.Workspace.ID, Pane: created.RootPane.ID, Program: filepath.Base(argv[0])}
	if err := h.waitShell(ctx, p.Pane); err != nil {
		return 0, err
	}
	var args []string
	prompt := ""
	for _, a := range argv[1:] {
		if hasControl(a) && prompt == "" {
			prompt = a
			continue
		}
		args = append(args, a)
	}
	if herdrKinds[p.Program] {
		p.Agent = true
		if err := h.Call(ctx, "agent.start", map[string]any{"name": herdrName(name), "kind": p.Program, "pane_id": p.Pane, "args": args}, nil); err != nil {
			return 0, err
		}
	} else if err := h.Call(ctx, "pane.send_input", map[string]any{"pane_id": p.Pane, "text": ShellLine(append([]string{argv[0]}, args...)), "keys": []string{"enter"}}, nil); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(h.State, 0o755); err != nil {
		return 0, err
	}
	data, _ := json.Marshal(p)
	if err := os.WriteFile(h.stateFile(name), data, 0o644); err != nil {
		return 0, err
	}
	if prompt != "" {
		if err := h.Send(ctx, name, prompt); err != nil {
			return 0, err
		}
	}
	var info struct {
		PID int `json:"shell_pid"`
	}
	if err := h.Call(ctx, "pane.process_info", map[string]any{"pane_id": p.Pane}, &info); err != nil {
		return 0, nil // the agent runs; its pid is unknown, and the pane is what flume watches
	}
	return info.PID, nil
}

// herdrName fits a pane name to herdr's agent names: [a-z][a-z0-9_-]{0,31}.
func herdrName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		}
	}
	s := strings.TrimLeft(b.String(), "0123456789-_")
	if s == "" {
		s = "flume"
	}
	if len(s) > 32 {
		s = s[len(s)-32:]
		s = "f" + strings.TrimLeft(s[1:], "0123456789-_")
	}
	return s
}

// waitShell waits for the new pane's shell prompt: herdr refuses to start
// an agent in a busy pane.
func (h *Herdr) waitShell(ctx context.Context, pane string) error {
	wait := h.PromptWait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		text, err := h.read(ctx, pane)
		if err != nil {
			return err
		}
		lines := strings.Split(strings.TrimRight(text, " \n"), "\n")
		last := strings.TrimSpace(lines[len(lines)-1])
		if strings.HasSuffix(last, "$") || strings.HasSuffix(last, "#") || strings.HasSuffix(last, "%") || strings.HasSuffix(last, ">") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("herdr pane %s: no shell prompt within %s (screen ends %q)", pane, wait, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (h *Herdr) read(ctx context.Context, pane string) (string, error) {
	var r struct {
		Read struct {
			Text string `json:"text"`
		} `json:"read"`
	}
	err := h.Call(ctx, "pane.read", map[string]any{"pane_id": pane, "source": "visible", "format": "text", "strip_ansi": true}, &r)
	return r.Read.Text, err
}

// status is herdr's agent status of the pane: idle, working, blocked,
// done or unknown.
func (h *Herdr) status(ctx context.Context, p herdrPane) string {
	var r struct {
		Agent struct {
			Status string `json:"agent_status"`
		} `json:"agent"`
	}
	if err := h.Call(ctx, "agent.get", map[string]any{"target": p.Pane}, &r); err != nil {
		return "unknown"
	}
	return r.Agent.Status
}

// Alive reports whether a program runs in the pane in front of its shell
// (pane.process_info: a foreground process group that is not the shell's).
func (h *Herdr) Alive(ctx context.Context, name string) bool {
	p, err := h.pane(name)
	if err != nil {
		return false
	}
	var r struct {
		ShellPID       int `json:"shell_pid"`
		ForegroundPGID int `json:"foreground_pgid"`
	}
	if err := h.Call(ctx, "pane.process_info", map[string]any{"pane_id": p.Pane}, &r); err != nil {
		return false
	}
	return r.ForegroundPGID != 0 && r.ForegroundPGID != r.ShellPID
}

// Capture returns the pane's visible text.
func (h *Herdr) Capture(ctx context.Context, name string) (string, error) {
	p, err := h.pane(name)
	if err != nil {
		return "", err
	}
	return h.read(ctx, p.Pane)
}

// ErrBlocked is a pane herdr reports blocked (an approval or a question of
// the program's own): flume types nothing into it (X3).
var ErrBlocked = errors.New("herdr reports the pane blocked; nothing is typed into it")

// Send types text as a prompt (text, then Enter, paste-aware, by herdr),
// never into a pane herdr reports blocked.
func (h *Herdr) Send(ctx context.Context, name, text string) error {
	p, err := h.pane(name)
	if err != nil {
		return err
	}
	if h.status(ctx, p) == "blocked" {
		return fmt.Errorf("pane %s: %w", name, ErrBlocked)
	}
	if p.Agent {
		return h.Call(ctx, "agent.prompt", map[string]any{"target": p.Pane, "text": text}, nil)
	}
	return h.Call(ctx, "pane.send_input", map[string]any{"pane_id": p.Pane, "text": text, "keys": []string{"enter"}}, nil)
}

// SendKeys sends named keys (tmux names, such as Enter, are lowercased).
func (h *Herdr) SendKeys(ctx context.Context, name string, keys ...string) error {
	p, err := h.pane(name)
	if err != nil {
		return err
	}
	if h.status(ctx, p) == "blocked" {
		return fmt.Errorf("pane %s: %w", name, ErrBlocked)
	}
	lower := make([]string, len(keys))
	for i, k := range keys {
		lower[i] = strings.ToLower(k)
	}
	return h.Call(ctx, "pane.send_keys", map[string]any{"pane_id": p.Pane, "keys": lower}, nil)
}

// Kill closes the pane's workspace and verifies herdr no longer has the
// pane.
func (h *Herdr) Kill(ctx context.Context, name string) error {
	p, err := h.pane(name)
	if err != nil {
		return nil // never started here
	}
	if err := h.Call(ctx, "workspace.close", map[string]any{"workspace_id": p.Workspace}, nil); err != nil {
		var he *HerdrError
		if !errors.As(err, &he) || he.Code != "not_found" {
			return err
		}
	}
	err = h.Call(ctx, "pane.get", map[string]any{"pane_id": p.Pane}, nil)
	var he *HerdrError
	if !errors.As(err, &he) || he.Code != "not_found" {
		return fmt.Errorf("herdr pane %s is still there after workspace.close", p.Pane)
	}
	os.Remove(h.stateFile(name))
	return nil
}

// Reporter is a pane host that shows flume's own state of a pane (herdr's
// sidebar).
type Reporter interface {
	Report(ctx context.Context, name, state, message string) error
}

var _ Reporter = (*Herdr)(nil)

// Report publishes a place's stage and state into herdr's sidebar
// (pane.report_agent): state is idle, working, blocked or unknown.
func (h *Herdr) Report(ctx context.Context, name, state, message string) error {
	p, err := h.pane(name)
	if err != nil {
		return err
	}
	return h.Call(ctx, "pane.report_agent", map[string]any{
		"pane_id": p.Pane, "source": "git-flume", "agent": p.Program, "state": state, "message": message,
	}, nil)
}

// HerdrPluginID is the id of flume's herdr plugin.
const HerdrPluginID = "git-flume"

// herdrManifest is flume's herdr plugin (herdr 0.7 or later): the board as
// a pane, an action that opens it beside the focused pane, and a pane that
// attaches to a place's agent, which the board opens for "o N".
const herdrManifest = `# git flume's herdr plugin, written by git flume herdr-plugin.
id = "git-flume"
name = "git-flume"
version = %q
description = "git flume's board: every place on this host; keys to open, tell, stop, retry and launch; rows that sound"
min_herdr_version = "0.7.0"
platforms = ["linux", "macos"]

[[panes]]
id = "board"
title = "flume"
placement = "split"
command = ["git-flume", "board"]

[[panes]]
id = "attach"
title = "flume attach"
placement = "split"
command = ["sh", "-c", "exec git-flume attach --repo \"$FLUME_BOARD_REPO\" \"$FLUME_BOARD_PLACE\""]

[[actions]]
id = "board"
title = "git flume board"
description = "Open git flume's board beside the focused pane."
command = ["sh", "-c", "exec \"$HERDR_BIN_PATH\" plugin pane open --plugin git-flume --entrypoint board --placement split --focus"]
`

// HerdrKeys is the binding a user adds to herdr's config.toml: herdr 0.7
// binds no key from a plugin's manifest.
const HerdrKeys = `[[keys.command]]
key = "prefix+f"
type = "plugin_action"
command = "git-flume.board"
description = "git flume board"
`

// HerdrManifest is flume's herdr plugin manifest for plugin version
// version.
func HerdrManifest(version string) string { return fmt.Sprintf(herdrManifest, version) }

// WriteHerdrPlugin writes flume's herdr plugin manifest into dir (default:
// $XDG_DATA_HOME/flume/herdr-plugin, from vars) and returns its folder
// and the manifest's path.
func WriteHerdrPlugin(vars map[string]string, dir string) (string, string, error) {
	if dir == "" {
		data := vars["XDG_DATA_HOME"]
		if data == "" {
			data = filepath.Join(vars["HOME"], ".local", "share")
		}
		dir = filepath.Join(data, "flume", "herdr-plugin")
	}
	manifest := filepath.Join(dir, "herdr-plugin.toml")
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		err = os.WriteFile(manifest, []byte(HerdrManifest("0.1.0")), 0o644)
	}
	return dir, manifest, err
}
