package fakemodel

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Rule is one answer of a scenario. The first rule whose Match is in the
// conversation's last human prompt answers it (an empty Match matches all).
type Rule struct {
	Match string `json:"match"`
	// Text is the reply: a plain assistant message.
	Text string `json:"text,omitempty"`
	// Shell is a command for the offered shell tool (Bash, bash,
	// exec_command, shell); when the tool's result comes back, Then is
	// the reply.
	Shell string `json:"shell,omitempty"`
	Then  string `json:"then,omitempty"`
	// Ask makes Claude's AskUserQuestion call with this question.
	Ask string `json:"ask,omitempty"`
	// Tool calls the offered tool of this name (an MCP server's, say)
	// with Input; when its result comes back, Then is the reply.
	Tool  string         `json:"tool,omitempty"`
	Input map[string]any `json:"input,omitempty"`
	// Error answers with an HTTP 500 carrying this message.
	Error string `json:"error,omitempty"`
	// Drop starts the reply's stream and closes the connection mid-way,
	// every time: a stream error (Responses API only).
	Drop bool `json:"drop,omitempty"`
	// Cut is a reply cut for length: the provider's maximum output
	// reached (Anthropic's stop_reason max_tokens, a Responses stream's
	// response.incomplete for max_output_tokens).
	Cut string `json:"cut,omitempty"`
	// Before is a tool called first, before Tool (Claude Code edits only a
	// file it has read): Read, then Edit. Anthropic's API only.
	Before *Call `json:"before,omitempty"`
	// Slow sleeps this long before each streamed event.
	Slow string `json:"slow,omitempty"`
}

// Call is one tool call: the offered tool's name and its input.
type Call struct {
	Tool  string         `json:"tool"`
	Input map[string]any `json:"input,omitempty"`
}

// Scenario is what the server answers.
type Scenario struct {
	Rules []Rule `json:"rules"`
}

// LoadScenario reads a scenario file.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Scenario
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// Logged is one request as the log records it.
type Logged struct {
	Path       string `json:"path"`
	Model      string `json:"model"`
	LastPrompt string `json:"lastPrompt"`
	// Prompts counts the human prompts in the request: more than one is a
	// conversation that goes on (a resumed session), one is a fresh one.
	Prompts    int  `json:"prompts"`
	ToolResult bool `json:"toolResult"`
	// Result is the text of that tool result, where the API carries one.
	Result string   `json:"result,omitempty"`
	Tools  []string `json:"tools"`
	Reply  string   `json:"reply"`
}

// Server is a running fake model server.
type Server struct {
	URL      string
	scenario *Scenario
	logPath  string
	mu       sync.Mutex
	srv      *http.Server
	n        int
	// ids numbers the responses: real providers give every message an id
	// of its own, and transcript readers count usage by it.
	ids atomic.Int64
}

// newID returns a fresh response id with prefix.
func (s *Server) newID(prefix string) string {
	return fmt.Sprintf("%s%d", prefix, s.ids.Add(1))
}

// Start serves the scenario on 127.0.0.1 at a free port, logging each
// request as a JSON line to logPath.
func Start(s *Scenario, logPath string) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	fs := &Server{URL: "http://" + ln.Addr().String(), scenario: s, logPath: logPath}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/messages", fs.anthropic)
	mux.HandleFunc("/v1/messages/count_tokens", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"input_tokens": 10})
	})
	mux.HandleFunc("/v1/chat/completions", fs.chat)
	mux.HandleFunc("/v1/responses", fs.responses)
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": "fake-model", "object": "model", "type": "model", "display_name": "Fake"}}})
	})
	fs.srv = &http.Server{Handler: mux}
	go func() { _ = fs.srv.Serve(ln) }() // ends with ErrServerClosed at Close
	return fs, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v) // a client that hung up reads no answer
}

// conversation is what the server needs of a request, whatever its API.
type conversation struct {
	model      string
	lastPrompt string // the newest human text
	prompts    int    // how many human texts the request holds
	toolResult bool   // the newest message is a tool's result
	results    int    // how many tools' results followed the prompt
	result     string // that result's text
	tools      []string
	stream     bool
}

// answer is what to reply.
type answer struct {
	text     string
	toolName string
	toolArgs map[string]any
	err      string
	cut      bool
	drop     bool
	slow     time.Duration
}

var shellTools = map[string]string{"Bash": "command", "bash": "command", "exec_command": "cmd", "shell": "command"}

func (s *Server) decide(c conversation, path string) answer {
	var rule *Rule
	for i := range s.scenario.Rules {
		r := &s.scenario.Rules[i]
		if strings.Contains(c.lastPrompt, r.Match) {
			rule = r
			break
		}
	}
	a := answer{text: "FAKE: no rule matched."}
	if rule != nil {
		a.slow, _ = time.ParseDuration(rule.Slow)
		switch {
		case rule.Error != "":
			a = answer{err: rule.Error}
		case rule.Cut != "":
			a.text, a.cut = rule.Cut, true
		case rule.Drop:
			a.text, a.drop = "I was saying", true
		case rule.Before != nil && c.results == 0:
			a.text, a.toolName, a.toolArgs = "", rule.Before.Tool, rule.Before.Input
		case c.toolResult && (rule.Before == nil || c.results >= 2):
			a.text = rule.Then
			if a.text == "" {
				a.text = "FAKE: done."
			}
		case rule.Ask != "" && contains(c.tools, "AskUserQuestion"):
			a.text, a.toolName = "", "AskUserQuestion"
			a.toolArgs = map[string]any{"questions": []any{map[string]any{"question": rule.Ask, "header": "Question", "multiSelect": false,
				"options": []any{map[string]any{"label": "Yes", "description": "yes"}, map[string]any{"label": "No", "description": "no"}}}}}
		case rule.Tool != "":
			if contains(c.tools, rule.Tool) {
				a.text, a.toolName, a.toolArgs = "", rule.Tool, rule.Input
				if a.toolArgs == nil {
					a.toolArgs = map[string]any{}
				}
			} else {
				a.text = "FAKE: tool " + rule.Tool + " was not offered."
			}
		case rule.Shell != "":
			for _, t := range c.tools {
				if key, ok := shellTools[t]; ok {
					a.text, a.toolName, a.toolArgs = "", t, map[string]any{key: rule.Shell}
					break
				}
			}
			if a.toolName == "" {
				a.text = "FAKE: no shell tool was offered."
			}
		default:
			a.text = rule.Text
		}
	}
	s.log(Logged{Path: path, Model: c.model, LastPrompt: c.lastPrompt, Prompts: c.prompts, ToolResult: c.toolResult, Result: c.result, Tools: c.tools, Reply: a.text + a.toolName + a.err})
	return a
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func (s *Server) log(l Logged) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.logPath == "" {
		return
	}
	f, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	data, _ := json.Marshal(l)
	_, _ = f.Write(append(data, '\n')) // a test that reads the log fails on a line missing
}

// textOf joins the human text of a content that is a string or a list of
// blocks, and says whether it carries a tool's result. Text the agent
// program injects itself (<system-reminder>…) is not human text.
func textOf(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, false
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks) // a plain string holds no blocks
	var parts []string
	result := false
	for _, b := range blocks {
		switch b.Type {
		case "text", "input_text":
			if !strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>") {
				parts = append(parts, b.Text)
			}
		case "tool_result", "function_call_output":
			result = true
		}
	}
	return strings.Join(parts, "\n"), result
}

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, event string, v any, slow time.Duration) {
	if slow > 0 {
		time.Sleep(slow)
	}
	data, _ := json.Marshal(v)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", data)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

func fail(w http.ResponseWriter, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusInternalServerError)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}}) // a client that hung up reads no answer
}

// resultText is the text of the tool results among Anthropic content
// blocks: a result's content is a string or text blocks.
func resultText(raw json.RawMessage) string {
	var blocks []struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(raw, &blocks) // a plain string holds no blocks
	var parts []string
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		var text string
		if json.Unmarshal(b.Content, &text) == nil {
			parts = append(parts, text)
			continue
		}
		var inner []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(b.Content, &inner) // neither: no text
		for _, t := range inner {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
