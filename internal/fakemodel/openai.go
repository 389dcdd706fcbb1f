package fakemodel

import (
	"encoding/json"
	"net/http"
)

// chat serves POST /v1/chat/completions (what pi uses): streaming chunks
// ending in "data: [DONE]", tool calls in delta.tool_calls.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(w, "invalid_request_error", err.Error())
		return
	}
	c := req.conversation()
	a := s.decide(c, r.URL.Path)
	if a.err != "" {
		fail(w, "server_error", a.err)
		return
	}
	usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
	delta := map[string]any{"role": "assistant", "content": a.text}
	finish := "stop"
	if a.toolName != "" {
		args, _ := json.Marshal(a.toolArgs)
		delta = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": "call_fake", "type": "function",
			"function": map[string]any{"name": a.toolName, "arguments": string(args)}}}}
		finish = "tool_calls"
	}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": a.text}
		if a.toolName != "" {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": delta["tool_calls"]}
		}
		writeJSON(w, map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	startSSE(w)
	chunk := func(d map[string]any, fin any, u any) map[string]any {
		c := map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": d, "finish_reason": fin}}}
		if u != nil {
			c["usage"] = u
		}
		return c
	}
	sse(w, "", chunk(delta, nil, nil), a.slow)
	sse(w, "", chunk(map[string]any{}, finish, nil), a.slow)
	sse(w, "", map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": req.Model, "choices": []any{}, "usage": usage}, a.slow)
	_, _ = w.Write([]byte("data: [DONE]\n\n")) // a client that hung up reads no answer
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// responses serves POST /v1/responses (what Codex uses): streaming events
// from response.created to response.completed.
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(w, "invalid_request_error", err.Error())
		return
	}
	c := req.conversation()
	a := s.decide(c, r.URL.Path)
	if a.err != "" {
		fail(w, "server_error", a.err)
		return
	}
	var item map[string]any
	if a.toolName != "" {
		args, _ := json.Marshal(a.toolArgs)
		item = map[string]any{"type": "function_call", "id": "fc_fake", "status": "completed", "call_id": "call_fake", "name": a.toolName, "arguments": string(args)}
	} else {
		item = map[string]any{"type": "message", "id": "msg_fake", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": a.text, "annotations": []any{}}}}
	}
	// OpenAI's counts overlap: 30 of the 100 input tokens were cached, 5
	// of the 20 output tokens were reasoning.
	usage := map[string]any{"input_tokens": 100, "output_tokens": 20, "total_tokens": 120,
		"input_tokens_details": map[string]any{"cached_tokens": 30}, "output_tokens_details": map[string]any{"reasoning_tokens": 5}}
	resp := func(status string, output []any) map[string]any {
		return map[string]any{"id": "resp_fake", "object": "response", "status": status, "model": req.Model, "output": output, "usage": usage}
	}
	if !req.Stream {
		writeJSON(w, resp("completed", []any{item}))
		return
	}
	startSSE(w)
	sse(w, "response.created", map[string]any{"type": "response.created", "response": resp("in_progress", []any{})}, a.slow)
	sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item}, a.slow)
	if a.drop {
		// The connection goes with the stream unfinished.
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
			}
		}
		return
	}
	if a.toolName == "" {
		sse(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": "msg_fake", "delta": a.text}, a.slow)
	}
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item}, a.slow)
	if a.cut {
		cut := resp("incomplete", []any{item})
		cut["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
		sse(w, "response.incomplete", map[string]any{"type": "response.incomplete", "response": cut}, a.slow)
		return
	}
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": resp("completed", []any{item})}, a.slow)
}

// isInjected tells Codex's own context messages from a person's prompt.
func isInjected(text string) bool {
	for _, p := range []string{"<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions"} {
		if len(text) >= len(p) && text[:len(p)] == p {
			return true
		}
	}
	return false
}

// responsesRequest is what the server reads of a Responses request.
type responsesRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Input  []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	} `json:"input"`
	Tools []struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	} `json:"tools"`
}

// conversation is what decides the answer to req: the tools offered (an
// MCP server's, which Codex sends as a namespace, as namespace.tool), the
// newest human prompt, and whether the newest input is a tool's output.
func (req *responsesRequest) conversation() conversation {
	c := conversation{model: req.Model, stream: req.Stream}
	for _, t := range req.Tools {
		c.tools = append(c.tools, t.Name)
		if t.Type == "namespace" {
			for _, sub := range t.Tools {
				c.tools = append(c.tools, t.Name+"."+sub.Name)
			}
		}
	}
	for i := len(req.Input) - 1; i >= 0; i-- {
		in := req.Input[i]
		if i == len(req.Input)-1 && in.Type == "function_call_output" {
			c.toolResult = true
			if json.Unmarshal(in.Output, &c.result) != nil {
				c.result = string(in.Output) // not a plain string: as it came
			}
		}
		if in.Role == "user" {
			if text, _ := textOf(in.Content); text != "" && !isInjected(text) {
				c.lastPrompt = text
				break
			}
		}
	}
	for _, in := range req.Input {
		if text, _ := textOf(in.Content); in.Role == "user" && text != "" && !isInjected(text) {
			c.prompts++
		}
	}
	return c
}

// chatRequest is what the server reads of a Chat Completions request.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// conversation is what decides the answer to req: the tools offered, the
// newest human prompt, and whether the newest message is a tool's result
// (with its text).
func (req *chatRequest) conversation() conversation {
	c := conversation{model: req.Model, stream: req.Stream}
	for _, t := range req.Tools {
		c.tools = append(c.tools, t.Function.Name)
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if i == len(req.Messages)-1 && m.Role == "tool" {
			c.toolResult = true
			c.result, _ = textOf(m.Content)
		}
		if m.Role == "user" {
			c.lastPrompt, _ = textOf(m.Content)
			break
		}
	}
	for _, m := range req.Messages {
		if text, _ := textOf(m.Content); m.Role == "user" && text != "" {
			c.prompts++
		}
	}
	return c
}
