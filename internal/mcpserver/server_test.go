package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// session runs a server with an echo tool and a tool that waits to be
// cancelled; send writes a line, next reads the next response.
type session struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func newSession(t *testing.T) *session {
	t.Helper()
	s := &Server{Name: "test", Version: "1", Tools: []Tool{
		{Name: "echo", Description: "says it back", Params: []Param{
			{Name: "text", Type: "string", Description: "what to say", Required: true},
			{Name: "fail", Type: "boolean"},
		}, Call: func(_ context.Context, args json.RawMessage) (string, bool) {
			var in struct {
				Text string `json:"text"`
				Fail bool   `json:"fail"`
			}
			if err := json.Unmarshal(args, &in); err != nil {
				return err.Error(), true
			}
			return in.Text, in.Fail
		}},
		{Name: "wait", Description: "waits until cancelled", Call: func(ctx context.Context, _ json.RawMessage) (string, bool) {
			select {
			case <-ctx.Done():
				return "cancelled", true
			case <-time.After(30 * time.Second):
				return "not cancelled", false
			}
		}},
	}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- s.Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	return &session{t: t, in: inW, out: bufio.NewScanner(outR), done: done}
}

func (s *session) send(line string) {
	s.t.Helper()
	if _, err := s.in.Write([]byte(line + "\n")); err != nil {
		s.t.Fatal(err)
	}
}

func (s *session) next() map[string]any {
	s.t.Helper()
	got := make(chan map[string]any, 1)
	go func() {
		var m map[string]any
		if s.out.Scan() {
			_ = json.Unmarshal(s.out.Bytes(), &m)
		}
		got <- m
	}()
	select {
	case m := <-got:
		if m == nil {
			s.t.Fatal("the server wrote no response")
		}
		return m
	case <-time.After(10 * time.Second):
		s.t.Fatal("no response")
	}
	return nil
}

func asJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func TestLifecycleListAndCall(t *testing.T) {
	s := newSession(t)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if got := asJSON(s.next()); got != `{"id":1,"jsonrpc":"2.0","result":{"capabilities":{"tools":{"listChanged":false}},"protocolVersion":"2025-06-18","serverInfo":{"name":"test","version":"1"}}}` {
		t.Errorf("initialize: %s", got)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`) // never answered
	s.send(`{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"1999-01-01"}}`)
	if got := asJSON(s.next()); !strings.Contains(got, `"id":"a"`) || !strings.Contains(got, `"protocolVersion":"`+Versions[0]+`"`) {
		t.Errorf("initialize with an unknown revision: %s; want the newest, %s", got, Versions[0])
	}
	s.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if got := asJSON(s.next()); got != `{"id":2,"jsonrpc":"2.0","result":{}}` {
		t.Errorf("ping: %s", got)
	}
	s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	want := `{"id":3,"jsonrpc":"2.0","result":{"tools":[` +
		`{"description":"says it back","inputSchema":{"additionalProperties":false,"properties":{"fail":{"type":"boolean"},"text":{"description":"what to say","type":"string"}},"required":["text"],"type":"object"},"name":"echo"},` +
		`{"description":"waits until cancelled","inputSchema":{"additionalProperties":false,"properties":{},"type":"object"},"name":"wait"}]}}`
	if got := asJSON(s.next()); got != want {
		t.Errorf("tools/list:\n%s\nwant\n%s", got, want)
	}
	for _, c := range []struct{ args, want string }{
		{`{"text":"hi \"there\""}`, `{"content":[{"text":"hi \"there\"","type":"text"}],"isError":false}`},
		{`{"text":"no","fail":true}`, `{"content":[{"text":"no","type":"text"}],"isError":true}`},
		{`{}`, `{"content":[{"text":"invalid arguments for tool echo: missing required argument \"text\"","type":"text"}],"isError":true}`},
		{`{"text":1}`, `{"content":[{"text":"invalid arguments for tool echo: argument \"text\": not a string","type":"text"}],"isError":true}`},
		{`{"text":"x","other":1}`, `{"content":[{"text":"invalid arguments for tool echo: unexpected argument \"other\"","type":"text"}],"isError":true}`},
		{`[1]`, `{"content":[{"text":"invalid arguments for tool echo: not an object","type":"text"}],"isError":true}`},
	} {
		s.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":` + c.args + `}}`)
		if got := asJSON(s.next()["result"]); got != c.want {
			t.Errorf("echo %s: %s\nwant %s", c.args, got, c.want)
		}
	}
	s.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nosuch"}}`)
	if got := asJSON(s.next()["error"]); got != `{"code":-32602,"message":"Invalid params: unknown tool \"nosuch\""}` {
		t.Errorf("an unknown tool: %s", got)
	}
	s.send(`{"jsonrpc":"2.0","id":6,"method":"server/discover"}`)
	if got := asJSON(s.next()["error"]); !strings.Contains(got, `"code":-32601`) {
		t.Errorf("an unknown method: %s; want -32601, on which a newer client falls back to initialize", got)
	}
	s.in.Close()
	if err := <-s.done; err != nil {
		t.Errorf("Serve at the end of its input: %v", err)
	}
}

// A call in flight does not hold up a ping, and a cancellation reaches
// its tool.
func TestCallRunsBesidePingAndIsCancelled(t *testing.T) {
	s := newSession(t)
	s.send(`{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"wait"}}`)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if m := s.next(); m["id"] != float64(1) {
		t.Fatalf("the ping waited for the call: %v", m)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w","reason":"test"}}`)
	m := s.next()
	if m["id"] != "w" || asJSON(m["result"]) != `{"content":[{"text":"cancelled","type":"text"}],"isError":true}` {
		t.Fatalf("the cancelled call: %v", m)
	}
	s.in.Close()
	<-s.done
}

// At the end of its input the server finishes the calls in flight and
// answers them before it returns.
func TestEndOfInputWaitsForCalls(t *testing.T) {
	s := newSession(t)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"last"}}}`)
	s.in.Close()
	if got := asJSON(s.next()["result"]); !strings.Contains(got, `"text":"last"`) {
		t.Fatalf("the last call: %s", got)
	}
	if err := <-s.done; err != nil {
		t.Fatal(err)
	}
}
