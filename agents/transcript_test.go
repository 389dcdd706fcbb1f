package agents_test

import (
	"strings"
	"testing"

	"github.com/git-flume/git-flume/agents"
)

func read(t *testing.T, file, format string) *agents.Transcript {
	t.Helper()
	tr, err := agents.ReadTranscriptFile("testdata/"+file, format)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestClaudeTranscript_A1(t *testing.T) {
	tr := read(t, "claude.jsonl", agents.FormatClaude)
	if !tr.Received("Stage code: fix the login crash and commit.") {
		t.Errorf("prompt not found in %q", tr.Prompts)
	}
	if tr.Received("a subagent's prompt, not ours") || len(tr.Prompts) != 1 {
		t.Errorf("prompts = %q; tool results and sidechains are not prompts", tr.Prompts)
	}
	if tr.Question != "Keep the old endpoint?" {
		t.Errorf("question = %q", tr.Question)
	}
	if tr.Turn != agents.TurnRunning {
		t.Errorf("turn = %q, want running (a question is open)", tr.Turn)
	}
	if len(tr.Tools) != 2 || tr.Tools[0].Name != "Bash" || !strings.Contains(tr.Tools[0].Input, "git commit") {
		t.Errorf("tools = %+v", tr.Tools)
	}
	if u := tr.Usage; u.Input != 8 || u.Output != 52 || u.CacheRead != 50 || u.CacheWrite != 100 {
		t.Errorf("usage = %+v", u)
	}
}

func TestClaudeTranscriptNeedsAndQueuedTell_A6(t *testing.T) {
	tr := read(t, "claude-done.jsonl", agents.FormatClaude)
	if tr.Turn != agents.TurnDone {
		t.Fatalf("turn = %q", tr.Turn)
	}
	if got := tr.Need(); got != "the staging database password" {
		t.Errorf("need = %q", got)
	}
	if !tr.Received("Stage code: do it.") || !tr.Received("the password is in the vault") {
		t.Errorf("prompts = %q (a text-block prompt and a queued tell)", tr.Prompts)
	}
}

func TestCodexTranscript_A1(t *testing.T) {
	tr := read(t, "codex.jsonl", agents.FormatCodex)
	if !tr.Received("Stage code: fix the login crash and commit.") {
		t.Errorf("prompts = %q", tr.Prompts)
	}
	if tr.Received("<environment_context>injected</environment_context>") {
		t.Errorf("injected context counted as a prompt")
	}
	if tr.Turn != agents.TurnDone || tr.LastAssistant != "Committed the fix." {
		t.Errorf("turn %q, last %q", tr.Turn, tr.LastAssistant)
	}
	if tr.Usage.Input != 120 || tr.Usage.Output != 35 || tr.Usage.CacheRead != 20 {
		t.Errorf("usage = %+v", tr.Usage)
	}
	if len(tr.Tools) != 1 || tr.Tools[0].Name != "exec_command" {
		t.Errorf("tools = %+v", tr.Tools)
	}
}

func TestCodexQuestion(t *testing.T) {
	lines := `{"type":"event_msg","payload":{"type":"user_message","message":"go"}}
{"type":"response_item","payload":{"type":"function_call","name":"request_user_input","arguments":"{\"questions\":[{\"question\":\"Which DB?\"}]}","call_id":"c9"}}
{"type":"event_msg","payload":{"type":"task_complete"}}`
	tr, err := agents.ReadTranscript(strings.NewReader(lines), agents.FormatCodex)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Question != "Which DB?" || tr.Turn == agents.TurnDone {
		t.Fatalf("question %q turn %q", tr.Question, tr.Turn)
	}
}

func TestPiTranscript_A1(t *testing.T) {
	tr := read(t, "pi.jsonl", agents.FormatPi)
	if !tr.Received("Stage code: fix the login crash and commit.") {
		t.Errorf("prompts = %q", tr.Prompts)
	}
	if tr.Turn != agents.TurnLength || tr.LastAssistant != "Partway there." {
		t.Errorf("turn %q, last %q", tr.Turn, tr.LastAssistant)
	}
	if u := tr.Usage; u.Input != 20 || u.Output != 25 || u.CacheRead != 1 || u.CacheWrite != 2 || u.Cost != 0.75 {
		t.Errorf("usage = %+v", u)
	}
}
