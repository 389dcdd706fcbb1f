package agent_test

import (
	"strings"
	"testing"

	"github.com/git-flume/git-flume/agents"
)

func read(t *testing.T, file, format string) *agent.Transcript {
	t.Helper()
	tr, err := agent.ReadTranscriptFile("testdata/"+file, format)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestClaudeTranscript_A1(t *testing.T) {
	tr := read(t, "claude.jsonl", agent.FormatClaude)
	if !tr.Received("Stage code: fix the login crash and commit.") {
		t.Errorf("prompt not found in %q", tr.Prompts)
	}
	if tr.Received("a subagent's prompt, not ours") || len(tr.Prompts) != 1 {
		t.Errorf("prompts = %q; tool results and sidechains are not prompts", tr.Prompts)
	}
	if tr.Question != "Keep the old endpoint?" {
		t.Errorf("question = %q", tr.Question)
	}
	if tr.Turn != agent.TurnRunning {
		t.Errorf("turn = %q, want running (a question is open)", tr.Turn)
	}
	if len(tr.Tools) != 2 || tr.Tools[0].Name != "Bash" || !strings.Contains(tr.Tools[0].Input, "git commit") {
		t.Errorf("tools = %+v", tr.Tools)
	}
	if u := tr.Usage; u.Input != 8 || u.Output != 52 || u.CacheRead != 50 || u.CacheWrite != 100 || u.Priced {
		t.Errorf("usage = %+v", u)
	}
	if m := tr.Usage.Models; len(m) != 1 || m["m"].Sum() != 210 {
		t.Errorf("models = %+v, want model m with all 210 tokens", m)
	}
}

// W6: Claude Code writes each content block of a message as a line of its
// own, each with the message's usage: a message counts once, with the
// counts of its last line.
func TestClaudeUsageCountsEachMessageOnce_W6(t *testing.T) {
	lines := `{"type":"assistant","message":{"id":"msg_1","model":"claude-a","role":"assistant","content":[{"type":"text","text":"Looking."}],"usage":{"input_tokens":5,"cache_read_input_tokens":100,"output_tokens":1}}}
{"type":"assistant","message":{"id":"msg_1","model":"claude-a","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"cache_read_input_tokens":100,"output_tokens":30}}}
{"type":"assistant","message":{"id":"msg_2","model":"claude-b","role":"assistant","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn","usage":{"input_tokens":7,"output_tokens":3}}}`
	tr, err := agent.ReadTranscript(strings.NewReader(lines), agent.FormatClaude)
	if err != nil {
		t.Fatal(err)
	}
	want := agent.Tokens{Input: 12, Output: 33, CacheRead: 100}
	if tr.Usage.Tokens != want {
		t.Errorf("tokens = %+v, want %+v", tr.Usage.Tokens, want)
	}
	if a, b := tr.Usage.Models["claude-a"], tr.Usage.Models["claude-b"]; a.Sum() != 135 || b.Sum() != 10 {
		t.Errorf("by model: claude-a %+v, claude-b %+v", a, b)
	}
}

func TestClaudeTranscriptNeedsAndQueuedTell_A6(t *testing.T) {
	tr := read(t, "claude-done.jsonl", agent.FormatClaude)
	if tr.Turn != agent.TurnDone {
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
	tr := read(t, "codex.jsonl", agent.FormatCodex)
	if !tr.Received("Stage code: fix the login crash and commit.") {
		t.Errorf("prompts = %q", tr.Prompts)
	}
	if tr.Received("<environment_context>injected</environment_context>") {
		t.Errorf("injected context counted as a prompt")
	}
	if tr.Turn != agent.TurnDone || tr.LastAssistant != "Committed the fix." {
		t.Errorf("turn %q, last %q", tr.Turn, tr.LastAssistant)
	}
	// OpenAI's counts: the 20 cached are part of the 120 input, the 5 of
	// reasoning part of the 30 output; 150 tokens in all.
	if u := tr.Usage; u.Input != 100 || u.Output != 30 || u.CacheRead != 20 || u.Sum() != 150 || u.Priced {
		t.Errorf("usage = %+v", tr.Usage)
	}
	if m := tr.Usage.Models; len(m) != 1 || m["m"].Sum() != 150 {
		t.Errorf("models = %+v, want model m (from turn_context) with 150 tokens", m)
	}
	if len(tr.Tools) != 1 || tr.Tools[0].Name != "exec_command" {
		t.Errorf("tools = %+v", tr.Tools)
	}
}

func TestCodexQuestion(t *testing.T) {
	lines := `{"type":"event_msg","payload":{"type":"user_message","message":"go"}}
{"type":"response_item","payload":{"type":"function_call","name":"request_user_input","arguments":"{\"questions\":[{\"question\":\"Which DB?\"}]}","call_id":"c9"}}
{"type":"event_msg","payload":{"type":"task_complete"}}`
	tr, err := agent.ReadTranscript(strings.NewReader(lines), agent.FormatCodex)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Question != "Which DB?" || tr.Turn == agent.TurnDone {
		t.Fatalf("question %q turn %q", tr.Question, tr.Turn)
	}
}

// TestCodexFailedTurns_A8: Codex 0.171 ends a failed turn with
// task_complete carrying the error (lines as the real program wrote them
// against the fake model): a reply cut at the output limit is a length
// cut; a provider error blocks with Codex's words and kind; an earlier
// Codex's error event reads the same. A next prompt runs again.
func TestCodexFailedTurns_A8(t *testing.T) {
	const start = `{"type":"event_msg","payload":{"type":"user_message","message":"go"}}` + "\n"
	for _, c := range []struct{ name, lines, turn, text string }{
		{"cut for length", `{"type":"event_msg","payload":{"type":"task_complete","last_agent_message":null,"error":{"message":"Incomplete response returned, reason: max_output_tokens","codex_error_info":"other"}}}`,
			agent.TurnLength, ""},
		{"provider error", `{"type":"event_msg","payload":{"type":"task_complete","last_agent_message":null,"error":{"message":"We’re currently experiencing high demand, which may cause temporary errors.","codex_error_info":"internal_server_error"}}}`,
			agent.TurnError, "We’re currently experiencing high demand, which may cause temporary errors. (internal_server_error)"},
		{"an earlier Codex's error event", `{"type":"event_msg","payload":{"type":"error","message":"stream disconnected before completion"}}` + "\n" +
			`{"type":"event_msg","payload":{"type":"task_complete","last_agent_message":null}}`,
			agent.TurnError, "stream disconnected before completion"},
		{"a clean end", `{"type":"event_msg","payload":{"type":"task_complete","last_agent_message":"done"}}`, agent.TurnDone, ""},
	} {
		tr, err := agent.ReadTranscript(strings.NewReader(start+c.lines), agent.FormatCodex)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Turn != c.turn || tr.ErrorText != c.text {
			t.Errorf("%s: turn %q error %q, want %q %q", c.name, tr.Turn, tr.ErrorText, c.turn, c.text)
		}
		again, _ := agent.ReadTranscript(strings.NewReader(start+c.lines+"\n"+start), agent.FormatCodex)
		if again.Turn != agent.TurnRunning {
			t.Errorf("%s, then a prompt: turn %q, want running", c.name, again.Turn)
		}
	}
}

func TestPiTranscript_A1(t *testing.T) {
	tr := read(t, "pi.jsonl", agent.FormatPi)
	if !tr.Received("Stage code: fix the login crash and commit.") {
		t.Errorf("prompts = %q", tr.Prompts)
	}
	if tr.Turn != agent.TurnLength || tr.LastAssistant != "Partway there." {
		t.Errorf("turn %q, last %q", tr.Turn, tr.LastAssistant)
	}
	if u := tr.Usage; u.Input != 20 || u.Output != 25 || u.CacheRead != 1 || u.CacheWrite != 2 || u.Cost != 0.75 || !u.Priced {
		t.Errorf("usage = %+v", u)
	}
}

// TestRefusalsReadFromToolResults_A12: the newest line of a tool's result
// where the system refused it is kept, its end when long (where the
// refusal's words are), for Claude Code and Codex alike.
func TestRefusalsReadFromToolResults_A12(t *testing.T) {
	long := strings.Repeat("/deep", 60) + "/README.md: Permission denied"
	claude := `{"type":"user","message":{"role":"user","content":"go"}}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"sh: 1: cannot create /repo/a: Permission denied\nok"}]}}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"` + long + `"}]}]}}`
	tr, err := agent.ReadTranscript(strings.NewReader(claude), agent.FormatClaude)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(tr.Refused, "/README.md: Permission denied") || !strings.HasPrefix(tr.Refused, "…") || len(tr.Refused) > 210 {
		t.Errorf("claude: refused %q", tr.Refused)
	}
	codex := `{"type":"event_msg","payload":{"type":"user_message","message":"go"}}
{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"touch: cannot touch '/repo/x': Operation not permitted"}}`
	if tr, _ := agent.ReadTranscript(strings.NewReader(codex), agent.FormatCodex); tr.Refused != "touch: cannot touch '/repo/x': Operation not permitted" {
		t.Errorf("codex: refused %q", tr.Refused)
	}
	if tr, _ := agent.ReadTranscript(strings.NewReader(`{"type":"user","message":{"role":"user","content":"go"}}`), agent.FormatClaude); tr.Refused != "" {
		t.Errorf("no refusal: %q", tr.Refused)
	}
}

// TestInterruptedTurns_A8: a turn a person stopped reads as interrupted, not
// a prompt nor an error: Claude Code's "[Request interrupted by user…]"
// line (after a refused tool or Esc), Codex's turn_aborted "interrupted".
func TestInterruptedTurns_A8(t *testing.T) {
	claude := `{"type":"user","message":{"role":"user","content":"go"}}
{"type":"assistant","message":{"role":"assistant","stop_reason":"tool_use","content":[{"type":"tool_use","id":"t1","name":"Write","input":{}}]}}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"The user doesn't want to proceed with this tool use.","is_error":true,"tool_use_id":"t1"}]}}
{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}}`
	tr, _ := agent.ReadTranscript(strings.NewReader(claude), agent.FormatClaude)
	if tr.Turn != agent.TurnInterrupted || len(tr.Prompts) != 1 {
		t.Errorf("claude: turn %q, prompts %q", tr.Turn, tr.Prompts)
	}
	codex := `{"type":"event_msg","payload":{"type":"user_message","message":"go"}}
{"type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}`
	if tr, _ := agent.ReadTranscript(strings.NewReader(codex), agent.FormatCodex); tr.Turn != agent.TurnInterrupted || tr.ErrorText != "" {
		t.Errorf("codex: turn %q, error %q", tr.Turn, tr.ErrorText)
	}
}

// TestCodexAsksToLeaveItsSandbox_A11: a command Codex asks to run outside
// its sandbox is a permission it waits for, in its words, until the
// command's output comes back or the turn ends; under approval_policy
// never it asks nobody.
func TestCodexAsksToLeaveItsSandbox_A11(t *testing.T) {
	const asks = `{"type":"turn_context","payload":{"model":"m","approval_policy":"on-request"}}
{"type":"event_msg","payload":{"type":"user_message","message":"go"}}
{"type":"response_item","payload":{"type":"function_call","name":"exec_command","call_id":"c1","arguments":"{\"cmd\":\"touch x\",\"sandbox_permissions\":\"require_escalated\",\"justification\":\"to make the file\"}"}}`
	tr, _ := agent.ReadTranscript(strings.NewReader(asks), agent.FormatCodex)
	if tr.Permission != `run "touch x" outside its sandbox: to make the file` {
		t.Errorf("asked: permission %q", tr.Permission)
	}
	answered := asks + "\n" + `{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"ok"}}`
	if tr, _ := agent.ReadTranscript(strings.NewReader(answered), agent.FormatCodex); tr.Permission != "" {
		t.Errorf("answered: permission %q", tr.Permission)
	}
	ended := asks + "\n" + `{"type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}`
	if tr, _ := agent.ReadTranscript(strings.NewReader(ended), agent.FormatCodex); tr.Permission != "" {
		t.Errorf("turn ended: permission %q", tr.Permission)
	}
	never := strings.Replace(asks, "on-request", "never", 1)
	if tr, _ := agent.ReadTranscript(strings.NewReader(never), agent.FormatCodex); tr.Permission != "" {
		t.Errorf("approval never: permission %q", tr.Permission)
	}
}
