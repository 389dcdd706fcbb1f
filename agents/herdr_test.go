package agents_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/git-flume/git-flume/agents"
)

// fakeHerdr speaks herdr's socket API (newline-delimited JSON on a Unix
// socket) and records every call, in order.
type fakeHerdr struct {
	mu     sync.Mutex
	calls  []call
	reads  int
	status string // agent.get's agent_status
	closed bool
}

type call struct {
	Method string
	Params map[string]any
}

func (f *fakeHerdr) serve(t *testing.T) string {
	sock := filepath.Join(t.TempDir(), "herdr.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go f.handle(conn)
		}
	}()
	return sock
}

func (f *fakeHerdr) handle(conn net.Conn) {
	defer conn.Close()
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		var req struct {
			ID     string         `json:"id"`
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			return
		}
		f.mu.Lock()
		f.calls = append(f.calls, call{req.Method, req.Params})
		var result any = map[string]any{}
		var fail map[string]string
		switch req.Method {
		case "workspace.create":
			result = map[string]any{"workspace": map[string]any{"workspace_id": "w1"}, "root_pane": map[string]any{"pane_id": "w1:p1"}}
		case "pane.read":
			f.reads++
			text := "" // the shell is still starting
			if f.reads > 1 {
				text = "Last login: today\nuser@host:~/repo$ "
			}
			result = map[string]any{"read": map[string]any{"text": text, "truncated": false}}
		case "pane.process_info":
			result = map[string]any{"shell_pid": 100, "foreground_pgid": 200}
		case "agent.get":
			result = map[string]any{"agent": map[string]any{"agent_status": f.status}}
		case "pane.get":
			if f.closed {
				fail = map[string]string{"code": "not_found", "message": "pane not found"}
			}
		case "workspace.close":
			f.closed = true
		}
		f.mu.Unlock()
		resp := map[string]any{"id": req.ID}
		if fail != nil {
			resp["error"] = fail
		} else {
			resp["result"] = result
		}
		data, _ := json.Marshal(resp)
		conn.Write(append(data, '\n'))
	}
}

func (f *fakeHerdr) methods() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var m []string
	for _, c := range f.calls {
		m = append(m, c.Method)
	}
	return m
}

func (f *fakeHerdr) find(method string) *call {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.calls {
		if f.calls[i].Method == method {
			return &f.calls[i]
		}
	}
	return nil
}

// TestHerdrStartsAgentsWithoutControlCharacters_A2_O3: a pane is a
// workspace of its own with exactly the agent's environment; flume waits
// for its shell prompt, starts the agent with no control character in its
// arguments, then sends the multi-line prompt as a prompt.
func TestHerdrStartsAgentsWithoutControlCharacters_A2_O3(t *testing.T) {
	ctx := context.Background()
	f := &fakeHerdr{status: "idle"}
	h := &agents.Herdr{Socket: f.serve(t), State: t.TempDir()}
	prompt := "Stage code: fix it.\nCommit your work."
	if _, err := h.Start(ctx, "flume-1-fix--one-1-1", "/repo/places/fix--one", []string{"A=1", "FLUME_SESSION=s"}, []string{"claude", "--session-id", "s", prompt}); err != nil {
		t.Fatal(err)
	}
	want := []string{"workspace.create", "pane.read", "pane.read", "agent.start", "agent.get", "agent.prompt", "pane.process_info"}
	if got := f.methods(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("calls %v, want %v", got, want)
	}
	create := f.find("workspace.create").Params
	if create["cwd"] != "/repo/places/fix--one" || create["env"].(map[string]any)["FLUME_SESSION"] != "s" || create["focus"] != false {
		t.Fatalf("workspace.create %v", create)
	}
	start := f.find("agent.start").Params
	for _, a := range start["args"].([]any) {
		if strings.IndexFunc(a.(string), unicode.IsControl) >= 0 {
			t.Fatalf("agent.start got a control character in %q", a)
		}
	}
	if start["kind"] != "claude" || start["pane_id"] != "w1:p1" || strings.Join(toStrings(start["args"]), " ") != "--session-id s" {
		t.Fatalf("agent.start %v", start)
	}
	if name := start["name"].(string); len(name) > 32 || name[0] < 'a' || name[0] > 'z' {
		t.Fatalf("agent name %q is not a herdr name", name)
	}
	if p := f.find("agent.prompt").Params; p["text"] != prompt || p["target"] != "w1:p1" {
		t.Fatalf("agent.prompt %v", p)
	}
	if !h.Alive(ctx, "flume-1-fix--one-1-1") {
		t.Fatal("a pane with a foreground program is not alive")
	}
	if err := h.Report(ctx, "flume-1-fix--one-1-1", "working", "fix--one: stage code (1/2) working"); err != nil {
		t.Fatal(err)
	}
	if r := f.find("pane.report_agent").Params; r["state"] != "working" || r["source"] != "git-flume" || r["pane_id"] != "w1:p1" {
		t.Fatalf("pane.report_agent %v", r)
	}
	if err := h.Kill(ctx, "flume-1-fix--one-1-1"); err != nil {
		t.Fatal(err)
	}
	if got := f.methods(); got[len(got)-2] != "workspace.close" || got[len(got)-1] != "pane.get" {
		t.Fatalf("kill: %v", got)
	}
}

// TestHerdrNeverTypesIntoABlockedPane_X3: a pane herdr reports blocked
// gets nothing typed: no prompt, no keys.
func TestHerdrNeverTypesIntoABlockedPane_X3(t *testing.T) {
	ctx := context.Background()
	f := &fakeHerdr{status: "blocked"}
	h := &agents.Herdr{Socket: f.serve(t), State: t.TempDir()}
	_, err := h.Start(ctx, "p", "/r", nil, []string{"claude", "--session-id", "s", "do it\nnow"})
	if !errors.Is(err, agents.ErrBlocked) {
		t.Fatalf("start into a blocked pane: %v", err)
	}
	if err := h.Send(ctx, "p", "hello"); !errors.Is(err, agents.ErrBlocked) {
		t.Fatalf("send: %v", err)
	}
	if err := h.SendKeys(ctx, "p", "Enter"); !errors.Is(err, agents.ErrBlocked) {
		t.Fatalf("keys: %v", err)
	}
	for _, m := range f.methods() {
		if m == "agent.prompt" || m == "pane.send_input" || m == "pane.send_keys" {
			t.Fatalf("typed into a blocked pane: %v", f.methods())
		}
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
