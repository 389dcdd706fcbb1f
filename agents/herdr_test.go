package agent_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/internal/fakeherdr"
)

func serve(t *testing.T, status string) (*fakeherdr.Server, string) {
	f := &fakeherdr.Server{Status: status}
	sock := filepath.Join(t.TempDir(), "herdr.sock")
	if err := f.Listen(sock); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, sock
}

func methods(f *fakeherdr.Server) []string {
	var m []string
	for _, c := range f.Calls() {
		m = append(m, c.Method)
	}
	return m
}

func find(f *fakeherdr.Server, method string) *fakeherdr.Call {
	for _, c := range f.Calls() {
		if c.Method == method {
			return &c
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
	f, sock := serve(t, "idle")
	h := &agent.Herdr{Socket: sock, State: t.TempDir()}
	prompt := "Stage code: fix it.\nCommit your work."
	if _, err := h.Start(ctx, "flume-1-fix--one-1-1", "/repo/places/fix--one", []string{"A=1", "FLUME_SESSION=s"}, []string{"claude", "--session-id", "s", prompt}); err != nil {
		t.Fatal(err)
	}
	want := []string{"workspace.create", "pane.read", "pane.read", "agent.start", "agent.get", "agent.prompt", "pane.process_info"}
	if got := methods(f); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("calls %v, want %v", got, want)
	}
	create := find(f, "workspace.create").Params
	if create["cwd"] != "/repo/places/fix--one" || create["env"].(map[string]any)["FLUME_SESSION"] != "s" || create["focus"] != false {
		t.Fatalf("workspace.create %v", create)
	}
	start := find(f, "agent.start").Params
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
	if p := find(f, "agent.prompt").Params; p["text"] != prompt || p["target"] != "w1:p1" {
		t.Fatalf("agent.prompt %v", p)
	}
	if !h.Alive(ctx, "flume-1-fix--one-1-1") {
		t.Fatal("a pane with a foreground program is not alive")
	}
	if err := h.Report(ctx, "flume-1-fix--one-1-1", "working", "fix--one: stage code (1/2) working"); err != nil {
		t.Fatal(err)
	}
	if r := find(f, "pane.report_agent").Params; r["state"] != "working" || r["source"] != "git-flume" || r["pane_id"] != "w1:p1" {
		t.Fatalf("pane.report_agent %v", r)
	}
	if err := h.Kill(ctx, "flume-1-fix--one-1-1"); err != nil {
		t.Fatal(err)
	}
	if got := methods(f); got[len(got)-2] != "workspace.close" || got[len(got)-1] != "pane.get" {
		t.Fatalf("kill: %v", got)
	}
}

// TestHerdrNeverTypesIntoABlockedPane_X3: a pane herdr reports blocked
// gets nothing typed: no prompt, no keys.
func TestHerdrNeverTypesIntoABlockedPane_X3(t *testing.T) {
	ctx := context.Background()
	f, sock := serve(t, "blocked")
	h := &agent.Herdr{Socket: sock, State: t.TempDir()}
	_, err := h.Start(ctx, "p", "/r", nil, []string{"claude", "--session-id", "s", "do it\nnow"})
	if !errors.Is(err, agent.ErrBlocked) {
		t.Fatalf("start into a blocked pane: %v", err)
	}
	if err := h.Send(ctx, "p", "hello"); !errors.Is(err, agent.ErrBlocked) {
		t.Fatalf("send: %v", err)
	}
	if err := h.SendKeys(ctx, "p", "Enter"); !errors.Is(err, agent.ErrBlocked) {
		t.Fatalf("keys: %v", err)
	}
	for _, m := range methods(f) {
		if m == "agent.prompt" || m == "pane.send_input" || m == "pane.send_keys" {
			t.Fatalf("typed into a blocked pane: %v", methods(f))
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
