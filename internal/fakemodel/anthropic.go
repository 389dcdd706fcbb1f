package fakemodel

import (
	"encoding/json"
	"net/http"
)

// anthropic serves POST /v1/messages: streaming SSE (message_start,
// content_block_*, message_delta, message_stop) or one JSON message.
func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	var req anthropicRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(w, "invalid_request_error", err.Error())
		return
	}
	c := req.conversation()
	a := s.decide(c, r.URL.Path)
	if a.err != "" {
		fail(w, "api_error", a.err)
		return
	}
	usage := map[string]any{"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
	stop := "end_turn"
	var block map[string]any
	if a.toolName != "" {
		stop = "tool_use"
		block = map[string]any{"type": "tool_use", "id": "toolu_fake" + r.Header.Get("X-Request-Id"), "name": a.toolName, "input": a.toolArgs}
	} else {
		block = map[string]any{"type": "text", "text": a.text}
	}
	if a.cut {
		stop = "max_tokens"
	}
	id := s.newID("msg_fake_")
	msg := map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
	if !req.Stream {
		writeJSON(w, msg)
		return
	}
	startSSE(w)
	start := map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 100, "output_tokens": 1}}
	sse(w, "message_start", map[string]any{"type": "message_start", "message": start}, a.slow)
	if a.toolName != "" {
		args, _ := json.Marshal(a.toolArgs)
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": a.toolName, "input": map[string]any{}}}, a.slow)
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}}, a.slow)
	} else {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}}, a.slow)
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": a.text}}, a.slow)
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}, a.slow)
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 20}}, a.slow)
	sse(w, "message_stop", map[string]any{"type": "message_stop"}, a.slow)
}

// anthropicRequest is what the server reads of a Messages request.
type anthropicRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// conversation is what decides the answer to req: the tools offered, the
// newest human prompt, and whether the newest message is a tool's result
// (with its text).
func (req *anthropicRequest) conversation() conversation {
	c := conversation{model: req.Model, stream: req.Stream}
	for _, t := range req.Tools {
		c.tools = append(c.tools, t.Name)
	}
	// The newest message that is not the system's decides whether a tool
	// result came back; the newest human text is the prompt.
	last := true
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" && m.Role != "assistant" {
			continue
		}
		text, result := textOf(m.Content)
		if last {
			// A message with a new prompt beside a tool's result asks
			// for the prompt.
			c.toolResult = result && m.Role == "user" && text == ""
			if c.toolResult {
				c.result = resultText(m.Content)
			}
			last = false
		}
		if m.Role == "user" && text != "" {
			c.lastPrompt = text
			break
		}
		if result && m.Role == "user" {
			c.results++
		}
	}
	for _, m := range req.Messages {
		if text, _ := textOf(m.Content); m.Role == "user" && text != "" {
			c.prompts++
		}
	}
	return c
}
