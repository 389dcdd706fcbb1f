package agent

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// Turn endings a transcript can show.
const (
	TurnRunning = "running" // the last turn has not ended
	TurnDone    = "done"
	TurnLength  = "length" // cut for length
	TurnError   = "error"
	// TurnInterrupted: a person stopped the turn (Esc in the pane, or a
	// permission said no to), and the program waits at its composer.
	TurnInterrupted = "interrupted"
	TurnNone        = "" // no assistant reply yet
)

// ToolCall is one tool use the transcript shows.
type ToolCall struct {
	Name  string `json:"name"`
	Input string `json:"input"` // a short rendering of its input
}

// Tokens are token counts of one kind each, disjoint: Input is the input
// read neither from nor into the prompt cache.
type Tokens struct {
	Input      int `json:"input"`
	Output     int `json:"output"`
	CacheRead  int `json:"cacheRead"`
	CacheWrite int `json:"cacheWrite"`
}

// Sum is every token counted once.
func (t Tokens) Sum() int { return t.Input + t.Output + t.CacheRead + t.CacheWrite }

func (t Tokens) plus(o Tokens) Tokens {
	return Tokens{t.Input + o.Input, t.Output + o.Output, t.CacheRead + o.CacheRead, t.CacheWrite + o.CacheWrite}
}

func (t Tokens) minus(o Tokens) Tokens {
	return Tokens{t.Input - o.Input, t.Output - o.Output, t.CacheRead - o.CacheRead, t.CacheWrite - o.CacheWrite}
}

// Usage is token usage summed over a transcript, and its cost where the
// transcript carries one.
type Usage struct {
	Tokens
	// Models splits the tokens by the model that spent them ("" when the
	// transcript names none).
	Models map[string]Tokens `json:"models,omitempty"`
	// Cost is the transcript's own cost (pi records one per message);
	// Priced says there was one. Claude Code and Codex record tokens only.
	Cost   float64 `json:"cost"`
	Priced bool    `json:"priced"`
}

// Minus is u without what before counted: the part of a transcript written
// after before was read of it (a resumed session's later run).
func (u Usage) Minus(before Usage) Usage {
	d := Usage{Tokens: u.Tokens.minus(before.Tokens), Cost: u.Cost - before.Cost, Priced: u.Priced}
	for m, t := range u.Models {
		if d.Models == nil {
			d.Models = map[string]Tokens{}
		}
		d.Models[m] = t.minus(before.Models[m])
	}
	return d
}

// add counts tokens spent on model.
func (u *Usage) add(model string, t Tokens) {
	u.Tokens = u.Tokens.plus(t)
	if u.Models == nil {
		u.Models = map[string]Tokens{}
	}
	u.Models[model] = u.Models[model].plus(t)
}

// Transcript is what flume reads from an agent program's own record of its
// session.
type Transcript struct {
	// Prompts are the user messages the program received, in order, as
	// text (tool results are not prompts).
	Prompts []string
	// LastAssistant is the text of the newest assistant message.
	LastAssistant string
	// Question is an unanswered question the agent asked the user
	// (Claude AskUserQuestion, Codex request_user_input), or "".
	Question string
	// Turn says how the last turn ended.
	Turn string
	// ErrorText is the provider or stream error that ended the last turn.
	ErrorText string
	Tools     []ToolCall
	// Permission is what the program's own record says it waits for a
	// person to allow (Codex: a command it asked to run outside its
	// sandbox, not yet answered), "" for none (A11).
	Permission string
	// Refused is the newest line of a tool's result where the system
	// refused it (a write the sandbox holds, A12: "Permission denied",
	// "Operation not permitted", "Read-only file system"), "" for none.
	Refused string
	Usage   Usage
	// Lines counts the lines read, unknown ones included.
	Lines int
	// Newest is the newest time a line of the main session carries
	// (Claude Code's "timestamp"): when the program made it, however late
	// it reached the file.
	Newest time.Time

	claudeQuestionID string
	codexCallID      string
	// codexAsks is the call that asks a person's approval, and
	// codexNeverAsks a session whose approval policy is never.
	codexAsks      string
	codexNeverAsks bool
	// claudeUsage is what each assistant message (by id) was counted as:
	// Claude Code writes a message's content blocks as separate lines, each
	// carrying the message's usage, which must count once.
	claudeUsage map[string]Tokens
	codexModel  string
	piModel     string
}

// Received reports whether the program received prompt: a user message
// whose text equals it (surrounding blank space aside).
func (t *Transcript) Received(prompt string) bool {
	want := strings.TrimSpace(prompt)
	for _, p := range t.Prompts {
		if strings.TrimSpace(p) == want {
			return true
		}
	}
	return false
}

// Need returns what the agent said it needs: the rest of the first line of
// its last message that starts with "NEEDS:" (A6), once its turn is done.
func (t *Transcript) Need() string { return t.closing("NEEDS:") }

// Recreate returns the resume message of an agent that asked for a fresh
// session in its place: the rest of the first line of its last
// message that starts with "RECREATE:", once its turn is done.
func (t *Transcript) Recreate() string { return t.closing("RECREATE:") }

// NextRound returns where a question's next round starts, as a round that
// stopped short said it (K4): the rest of the first line of its last
// message that starts with "NEXT ROUND:", once its turn is done.
func (t *Transcript) NextRound() string { return t.closing("NEXT ROUND:") }

// closing is the rest of the first line of the last message of a finished
// turn that starts with marker, "" when none does.
func (t *Transcript) closing(marker string) string {
	if t.Turn != TurnDone {
		return ""
	}
	for line := range strings.SplitSeq(t.LastAssistant, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), marker); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// Formats of transcripts flume reads.
const (
	FormatClaude = "claude"
	FormatCodex  = "codex"
	FormatPi     = "pi"
)

// ReadTranscriptFile reads a transcript file of the given format.
func ReadTranscriptFile(path, format string) (*Transcript, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadTranscript(f, format)
}

// ReadTranscript reads a JSONL transcript. Unknown lines, fields and record
// types are skipped; a line cut short by a writer still writing is ignored.
func ReadTranscript(r io.Reader, format string) (*Transcript, error) {
	var read func(*Transcript, []byte)
	switch format {
	case FormatClaude:
		read = readClaudeLine
	case FormatCodex:
		read = readCodexLine
	case FormatPi:
		read = readPiLine
	default:
		return nil, fmt.Errorf("unknown transcript format %q (want claude, codex or pi)", format)
	}
	t := &Transcript{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		t.Lines++
		read(t, line)
	}
	return t, sc.Err()
}

// text joins the text blocks of a message content that is either a string
// or an array of blocks with "text".
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Text != "" && (b.Type == "text" || b.Type == "input_text" || b.Type == "output_text") {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// refusedWords are how the system says it refused a tool's write.
var refusedWords = []string{"Permission denied", "Operation not permitted", "Read-only file system"}

// noteRefusal keeps the last line of a tool's result that says the system
// refused it.
func (t *Transcript) noteRefusal(result string) {
	for line := range strings.SplitSeq(result, "\n") {
		for _, w := range refusedWords {
			if strings.Contains(line, w) {
				// The refusal's own words end the line: its end is kept.
				t.Refused = strings.TrimSpace(line)
				if n := len(t.Refused) - 200; n > 0 {
					for n < len(t.Refused) && !utf8.RuneStart(t.Refused[n]) {
						n++
					}
					t.Refused = "…" + t.Refused[n:]
				}
			}
		}
	}
}

func short(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// claudeLine is one line of a Claude Code transcript, as far as flume
// reads it.
type claudeLine struct {
	Timestamp   string `json:"timestamp"`
	Type        string `json:"type"`
	IsSidechain bool   `json:"isSidechain"`
	Operation   string `json:"operation"`
	Content     string `json:"content"`
	Subtype     string `json:"subtype"`
	Attachment  struct {
		Type   string `json:"type"`
		Prompt string `json:"prompt"`
	} `json:"attachment"`
	Message struct {
		ID         string          `json:"id"`
		Model      string          `json:"model"`
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		StopReason *string         `json:"stop_reason"`
		Usage      struct {
			Input      int `json:"input_tokens"`
			Output     int `json:"output_tokens"`
			CacheRead  int `json:"cache_read_input_tokens"`
			CacheWrite int `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	} `json:"message"`
	IsAPIErrorMessage bool `json:"isApiErrorMessage"`
}

// Claude Code: ~/.claude/projects/<slug>/<session-id>.jsonl. A subagent's
// lines (sidechain) are not the agent's own.
func readClaudeLine(t *Transcript, line []byte) {
	var l claudeLine
	if json.Unmarshal(line, &l) != nil || l.IsSidechain {
		return
	}
	if at, err := time.Parse(time.RFC3339Nano, l.Timestamp); err == nil && at.After(t.Newest) {
		t.Newest = at
	}
	switch l.Type {
	case "queue-operation":
		// A message sent while the agent works is enqueued on receipt.
		if l.Operation == "enqueue" && l.Content != "" {
			t.Prompts = append(t.Prompts, l.Content)
		}
	case "attachment":
		if l.Attachment.Type == "queued_command" && l.Attachment.Prompt != "" {
			t.Prompts = append(t.Prompts, l.Attachment.Prompt)
		}
	case "user":
		t.readClaudeUser(l)
	case "assistant":
		t.readClaudeAssistant(l)
	case "system":
		if l.Subtype == "turn_duration" && t.Turn == TurnRunning && t.Question == "" {
			t.Turn = TurnDone
		}
	}
}

// readClaudeUser reads a user line: a tool's result (which answers an open
// question when it is that question's) or a prompt; either way the agent
// is at work again.
func (t *Transcript) readClaudeUser(l claudeLine) {
	var blocks []struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
	}
	if json.Unmarshal(l.Message.Content, &blocks) == nil {
		for _, b := range blocks {
			if b.Type == "tool_result" {
				t.noteRefusal(text(b.Content))
				if b.ToolUseID == t.questionID() {
					t.Question = ""
				}
				t.Turn = TurnRunning
				return
			}
		}
	}
	if s := text(l.Message.Content); strings.HasPrefix(s, "[Request interrupted by user") {
		// Claude Code's own line for a turn a person stopped: no prompt.
		t.Turn = TurnInterrupted
		return
	}
	if s := text(l.Message.Content); s != "" {
		t.Prompts = append(t.Prompts, s)
		t.Question = ""
		t.Turn = TurnRunning
	}
}

// readClaudeAssistant reads an assistant line: its usage (a message's
// lines repeat its counts; its last has the final ones), its text and tool
// calls (AskUserQuestion opens a question), and how its turn stands.
func (t *Transcript) readClaudeAssistant(l claudeLine) {
	u := l.Message.Usage
	tokens := Tokens{u.Input, u.Output, u.CacheRead, u.CacheWrite}
	if id := l.Message.ID; id != "" {
		if t.claudeUsage == nil {
			t.claudeUsage = map[string]Tokens{}
		}
		counted := t.claudeUsage[id]
		t.claudeUsage[id] = tokens
		tokens = tokens.minus(counted)
	}
	t.Usage.add(l.Message.Model, tokens)
	var blocks []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(l.Message.Content, &blocks) // a plain string holds no blocks
	for _, b := range blocks {
		switch b.Type {
		case "text":
			t.LastAssistant = b.Text
		case "tool_use":
			t.Tools = append(t.Tools, ToolCall{Name: b.Name, Input: short(b.Input)})
			if b.Name == "AskUserQuestion" {
				t.Question = questionText(b.Input)
				t.claudeQuestionID = b.ID
			}
		}
	}
	stop := ""
	if l.Message.StopReason != nil {
		stop = *l.Message.StopReason
	}
	switch {
	case l.IsAPIErrorMessage:
		t.Turn, t.ErrorText = TurnError, t.LastAssistant
	case stop == "end_turn" || stop == "stop_sequence":
		t.Turn = TurnDone
	case stop == "max_tokens":
		t.Turn = TurnLength
	default:
		t.Turn = TurnRunning
	}
}

func questionText(input json.RawMessage) string {
	var q struct {
		Questions []struct {
			Question string `json:"question"`
		} `json:"questions"`
	}
	if json.Unmarshal(input, &q) == nil && len(q.Questions) > 0 {
		return q.Questions[0].Question
	}
	return "(a question)"
}

func (t *Transcript) questionID() string {
	if t.Question == "" {
		return ""
	}
	return t.claudeQuestionID
}

// codexPayload is the payload of one line of a Codex CLI rollout file, as
// far as flume reads it.
type codexPayload struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Message   string          `json:"message"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Reason    string          `json:"reason"`
	Model     string          `json:"model"`
	Approval  string          `json:"approval_policy"`
	LastAgent string          `json:"last_agent_message"`
	Info      struct {
		Total struct {
			Input     int `json:"input_tokens"`
			CachedIn  int `json:"cached_input_tokens"`
			Output    int `json:"output_tokens"`
			Reasoning int `json:"reasoning_output_tokens"`
		} `json:"total_token_usage"`
	} `json:"info"`
	Item struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	} `json:"item"`
	// Error is what ended a turn that failed (task_complete's error:
	// Codex 0.171 records a provider error and a reply cut for length
	// so); Info is Codex's kind of it, a word or an object.
	Error *struct {
		Message string          `json:"message"`
		Info    json.RawMessage `json:"codex_error_info"`
	} `json:"error"`
}

// codexFailed reads a turn's failure: a reply cut at the output limit is
// a length cut (A8's one recovery), anything else a provider or stream
// error with Codex's own words and kind.
func (t *Transcript) codexFailed(message string, info json.RawMessage) {
	if strings.Contains(message, "max_output_tokens") {
		t.Turn = TurnLength
		return
	}
	t.Turn, t.ErrorText = TurnError, message
	var kind string
	if json.Unmarshal(info, &kind) == nil && kind != "" && kind != "other" {
		t.ErrorText += " (" + kind + ")"
	}
}

// codexApproval reads a command Codex asks to run outside its sandbox
// (sandbox_permissions require_escalated; with_escalated_permissions
// before): under an approval policy that asks, a person must allow it,
// and until its output comes back, Codex waits (A11).
func (t *Transcript) codexApproval(p codexPayload) {
	var args struct {
		Cmd           json.RawMessage `json:"cmd"`
		Command       json.RawMessage `json:"command"`
		Sandbox       string          `json:"sandbox_permissions"`
		Escalated     bool            `json:"with_escalated_permissions"`
		Justification string          `json:"justification"`
	}
	if t.codexNeverAsks || json.Unmarshal([]byte(p.Arguments), &args) != nil || args.Sandbox != "require_escalated" && !args.Escalated {
		return
	}
	cmd := text(args.Cmd)
	if cmd == "" {
		var argv []string
		if json.Unmarshal(args.Command, &argv) == nil {
			cmd = strings.Join(argv, " ")
		}
	}
	t.Permission, t.codexAsks = fmt.Sprintf("run %q outside its sandbox: %s", cmd, args.Justification), p.CallID
}

// Codex CLI rollout files: $CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<id>.jsonl.
func readCodexLine(t *Transcript, line []byte) {
	var l struct {
		Type    string       `json:"type"`
		Payload codexPayload `json:"payload"`
	}
	if json.Unmarshal(line, &l) != nil {
		return
	}
	switch l.Type {
	case "event_msg":
		t.readCodexEvent(l.Payload)
	case "response_item":
		t.readCodexItem(l.Payload)
	case "turn_context":
		t.codexModel = l.Payload.Model
		t.codexNeverAsks = l.Payload.Approval == "never"
	}
}

// readCodexEvent reads an event: a prompt, a turn starting, ending or
// aborted, the token totals, the agent's message.
func (t *Transcript) readCodexEvent(p codexPayload) {
	if p.Type == "task_complete" || p.Type == "turn_complete" || p.Type == "turn_aborted" {
		t.Permission, t.codexAsks = "", "" // a turn's end answers what it asked
	}
	switch {
	case p.Type == "user_message":
		t.Prompts = append(t.Prompts, p.Message)
		t.Turn = TurnRunning
	case p.Type == "item_completed" && p.Item.Type == "UserMessage":
		t.Prompts = append(t.Prompts, text(p.Item.Content))
		t.Turn = TurnRunning
	case p.Type == "task_started" || p.Type == "turn_started":
		t.Turn, t.Permission = TurnRunning, ""
	case (p.Type == "task_complete" || p.Type == "turn_complete") && p.Error != nil:
		t.codexFailed(p.Error.Message, p.Error.Info)
	case p.Type == "error":
		// Codex before 0.171: the error event, then the turn's end.
		t.codexFailed(p.Message, nil)
	case p.Type == "task_complete" || p.Type == "turn_complete":
		if p.LastAgent != "" {
			t.LastAssistant = p.LastAgent
		}
		if t.Question == "" && t.Turn != TurnError && t.Turn != TurnLength {
			t.Turn = TurnDone
		}
	case p.Type == "turn_aborted" && p.Reason == "interrupted":
		t.Turn = TurnInterrupted
	case p.Type == "turn_aborted":
		t.Turn, t.ErrorText = TurnError, "turn aborted: "+p.Reason
	case p.Type == "token_count":
		// Cumulative totals, in OpenAI's terms: cached input is part of
		// input_tokens, reasoning part of output_tokens.
		tot := p.Info.Total
		if tot.Input == 0 && tot.Output == 0 {
			return // a rate-limit-only event
		}
		tokens := Tokens{Input: tot.Input - tot.CachedIn, Output: tot.Output, CacheRead: tot.CachedIn}
		t.Usage = Usage{}
		t.Usage.add(t.codexModel, tokens)
	case p.Type == "agent_message":
		t.LastAssistant = p.Message
	}
}

// readCodexItem reads a response item: the assistant's message, a tool
// call (request_user_input opens a question) or a tool's output (which
// answers it).
func (t *Transcript) readCodexItem(p codexPayload) {
	switch {
	case p.Type == "message" && p.Role == "assistant":
		t.LastAssistant = text(p.Content)
	case p.Type == "function_call":
		t.Tools = append(t.Tools, ToolCall{Name: p.Name, Input: short(json.RawMessage(p.Arguments))})
		t.codexApproval(p)
		if p.Name == "request_user_input" {
			t.Question = questionText(json.RawMessage(p.Arguments))
			t.codexCallID = p.CallID
		}
	case p.Type == "function_call_output":
		t.noteRefusal(text(p.Output))
		if p.CallID == t.codexAsks {
			t.Permission, t.codexAsks = "", ""
		}
		if p.CallID == t.codexCallID {
			t.Question = ""
		}
	}
}

// pi: ~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl (session format 3).
func readPiLine(t *Transcript, line []byte) {
	var l struct {
		Type    string    `json:"type"`
		ModelID string    `json:"modelId"`
		Message piMessage `json:"message"`
	}
	if json.Unmarshal(line, &l) != nil {
		return
	}
	if l.Type == "model_change" {
		t.piModel = l.ModelID
		return
	}
	if l.Type != "message" {
		return
	}
	switch m := l.Message; m.Role {
	case "user":
		t.Prompts = append(t.Prompts, text(m.Content))
		t.Turn = TurnRunning
	case "assistant":
		t.readPiAssistant(m)
	}
}

// piMessage is a pi session message, as far as flume reads it.
type piMessage struct {
	Model        string          `json:"model"`
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	StopReason   string          `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	Usage        struct {
		Input      int `json:"input"`
		Output     int `json:"output"`
		CacheRead  int `json:"cacheRead"`
		CacheWrite int `json:"cacheWrite"`
		Cost       *struct {
			Total float64 `json:"total"`
		} `json:"cost"`
	} `json:"usage"`
}

// readPiAssistant reads an assistant message: its usage and cost, its text
// and tool calls, and how its turn stands.
func (t *Transcript) readPiAssistant(m piMessage) {
	t.Usage.add(cmp.Or(m.Model, t.piModel), Tokens{m.Usage.Input, m.Usage.Output, m.Usage.CacheRead, m.Usage.CacheWrite})
	if m.Usage.Cost != nil {
		t.Usage.Cost += m.Usage.Cost.Total
		t.Usage.Priced = true
	}
	var blocks []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(m.Content, &blocks) // a plain string holds no blocks
	for _, b := range blocks {
		switch b.Type {
		case "text":
			t.LastAssistant = b.Text
		case "toolCall":
			t.Tools = append(t.Tools, ToolCall{Name: b.Name, Input: short(b.Arguments)})
		}
	}
	switch m.StopReason {
	case "stop":
		t.Turn = TurnDone
	case "length":
		t.Turn = TurnLength
	case "error", "aborted":
		t.Turn, t.ErrorText = TurnError, m.ErrorMessage
		if t.ErrorText == "" {
			t.ErrorText = "turn ended: " + m.StopReason
		}
	default:
		t.Turn = TurnRunning
	}
}
