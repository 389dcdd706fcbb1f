package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
)

// Versions are the protocol revisions this server speaks, newest first.
// The parts it uses (tools with text results) are the same in each.
var Versions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// JSON-RPC 2.0 error codes (§5.1).
const (
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

// Param is one argument of a tool, as its input schema declares it.
type Param struct {
	Name        string
	Type        string // a JSON Schema type: "string" or "boolean"
	Description string
	Required    bool
}

// Tool is a tool the server offers.
type Tool struct {
	Name, Description string
	Params            []Param
	// Call runs the tool with its arguments, already checked against
	// Params (no other name, each of its type, every required one
	// there), and returns the result's text and whether the tool failed.
	Call func(ctx context.Context, args json.RawMessage) (text string, failed bool)
}

// Server serves its tools.
type Server struct {
	Name, Version string
	Tools         []Tool
}

// message is a JSON-RPC message as the server reads it.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Params json.RawMessage `json:"params"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Serve answers the requests read from in on out until in ends or ctx
// does; it waits for the calls in flight before it returns.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()
	c := &conn{s: s, out: out, inflight: map[string]context.CancelFunc{}}
	defer c.wg.Wait()
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				select {
				case lines <- line:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case line := <-lines:
			c.handle(ctx, line)
		}
	}
}

// conn is one client's session.
type conn struct {
	s        *Server
	wmu      sync.Mutex // one message a write
	out      io.Writer
	mu       sync.Mutex // guards inflight
	inflight map[string]context.CancelFunc
	wg       sync.WaitGroup
}

// handle dispatches one message. A notification (no id) is never
// answered; a tools/call runs beside the others, so a ping or a
// cancellation is answered while it works.
func (c *conn) handle(ctx context.Context, line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		c.reply(nil, nil, &rpcError{codeInvalidRequest, "Invalid Request: " + err.Error()})
		return
	}
	if m.Method == nil {
		return // a response: the server sends no requests, so none is awaited
	}
	if m.ID == nil {
		if *m.Method == "notifications/cancelled" {
			c.cancel(m.Params)
		}
		return
	}
	switch *m.Method {
	case "initialize":
		c.reply(m.ID, c.initialize(m.Params), nil)
	case "ping":
		c.reply(m.ID, struct{}{}, nil)
	case "tools/list":
		c.reply(m.ID, c.list(), nil)
	case "tools/call":
		callCtx, cancel := context.WithCancel(ctx)
		key := string(m.ID)
		c.mu.Lock()
		c.inflight[key] = cancel
		c.mu.Unlock()
		c.wg.Go(func() {
			defer func() {
				c.mu.Lock()
				delete(c.inflight, key)
				c.mu.Unlock()
				cancel()
			}()
			result, rerr := c.call(callCtx, m.Params)
			c.reply(m.ID, result, rerr)
		})
	default:
		c.reply(m.ID, nil, &rpcError{codeMethodNotFound, fmt.Sprintf("Method not found: %q", *m.Method)})
	}
}

// reply writes a response: result, or rerr when it is not nil.
func (c *conn) reply(id json.RawMessage, result any, rerr *rpcError) {
	if id == nil {
		id = json.RawMessage("null")
	}
	resp := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *rpcError       `json:"error,omitempty"`
	}{"2.0", id, result, rerr}
	data, err := json.Marshal(resp)
	if err != nil {
		data, _ = json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   rpcError        `json:"error"`
		}{"2.0", id, rpcError{-32603, "Internal error: " + err.Error()}})
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, _ = c.out.Write(append(data, '\n')) // a client that is gone reads no answer
}

// initialize answers with the client's protocol revision when this server
// speaks it, else its newest (the client then decides).
func (c *conn) initialize(params json.RawMessage) any {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(params, &p) // a missing or odd version gets the newest
	version := Versions[0]
	if slices.Contains(Versions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	return map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
		"serverInfo":      map[string]any{"name": c.s.Name, "version": c.s.Version},
	}
}

// list is tools/list's result: every tool with its input schema.
func (c *conn) list() any {
	type property struct {
		Type        string `json:"type"`
		Description string `json:"description,omitempty"`
	}
	type schema struct {
		Type                 string              `json:"type"`
		Properties           map[string]property `json:"properties"`
		Required             []string            `json:"required,omitempty"`
		AdditionalProperties bool                `json:"additionalProperties"`
	}
	type tool struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		InputSchema schema `json:"inputSchema"`
	}
	tools := make([]tool, 0, len(c.s.Tools))
	for _, t := range c.s.Tools {
		sc := schema{Type: "object", Properties: map[string]property{}}
		for _, p := range t.Params {
			sc.Properties[p.Name] = property{p.Type, p.Description}
			if p.Required {
				sc.Required = append(sc.Required, p.Name)
			}
		}
		tools = append(tools, tool{t.Name, t.Description, sc})
	}
	return map[string]any{"tools": tools}
}

// textResult is a tools/call result of one text.
type textResult struct {
	Content []textContent `json:"content"`
	IsError bool          `json:"isError"`
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func text(s string, failed bool) textResult {
	return textResult{Content: []textContent{{"text", s}}, IsError: failed}
}

// call runs tools/call. An unknown tool is the protocol's error; arguments
// that do not fit the tool's schema are the tool's failure, told to the
// model so that it can correct them.
func (c *conn) call(ctx context.Context, params json.RawMessage) (any, *rpcError) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{codeInvalidParams, "Invalid params: " + err.Error()}
	}
	i := slices.IndexFunc(c.s.Tools, func(t Tool) bool { return t.Name == p.Name })
	if i < 0 {
		return nil, &rpcError{codeInvalidParams, fmt.Sprintf("Invalid params: unknown tool %q", p.Name)}
	}
	t := c.s.Tools[i]
	args, err := checkArgs(t, p.Arguments)
	if err != nil {
		return text(fmt.Sprintf("invalid arguments for tool %s: %v", t.Name, err), true), nil
	}
	out, failed := t.Call(ctx, args)
	return text(out, failed), nil
}

// checkArgs checks a call's arguments against the tool's parameters and
// returns them as an object ({} when none were given).
func checkArgs(t Tool, raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, errors.New("not an object")
	}
	for name, value := range args {
		i := slices.IndexFunc(t.Params, func(p Param) bool { return p.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("unexpected argument %q", name)
		}
		if !ofType(value, t.Params[i].Type) {
			return nil, fmt.Errorf("argument %q: not a %s", name, t.Params[i].Type)
		}
	}
	for _, p := range t.Params {
		if _, ok := args[p.Name]; p.Required && !ok {
			return nil, fmt.Errorf("missing required argument %q", p.Name)
		}
	}
	return raw, nil
}

func ofType(value json.RawMessage, typ string) bool {
	switch typ {
	case "string":
		var s string
		return json.Unmarshal(value, &s) == nil && value[0] == '"'
	case "boolean":
		return string(value) == "true" || string(value) == "false"
	}
	return false
}

// cancel ends the context of the call a notifications/cancelled names.
func (c *conn) cancel(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return
	}
	c.mu.Lock()
	cancel := c.inflight[string(p.RequestID)]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
