package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMCPServerAnswersMalformedAndKeepsServing_O2: the real MCP server,
// sent a line that is not JSON, a NUL, an object id and nesting past
// sense, answers each with JSON-RPC's error and goes on serving: a good
// request after them is answered.
func TestMCPServerAnswersMalformedAndKeepsServing_O2(t *testing.T) {
	dir := t.TempDir()
	env := append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+dir+"/gitconfig", "FLUME_HOST=testhost")
	if out, err := exec.Command("git", "init", "-q", dir+"/repo").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int)
	go func() {
		done <- run(context.Background(), []string{"git-flume", "mcp", "--repo", dir + "/repo"}, &streams{In: inR, Out: outW, Err: io.Discard}, env)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	send := func(s string) { inW.Write([]byte(s + "\n")) }
	read := func() map[string]any {
		t.Helper()
		got := make(chan map[string]any, 1)
		go func() {
			var m map[string]any
			if lines.Scan() {
				json.Unmarshal(lines.Bytes(), &m)
			}
			got <- m
		}()
		select {
		case m := <-got:
			if m == nil {
				t.Fatal("the server wrote nothing, or not JSON: it has ended")
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatal("no answer")
		}
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := read(); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, c := range []struct {
		line string
		code float64
	}{
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list"`, -32700},
		{"\x00", -32700},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`, -32600},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}`, -32700},
	} {
		send(c.line)
		m := read()
		if e, _ := m["error"].(map[string]any); e == nil || e["code"] != c.code {
			t.Errorf("%.40q answered %v; want error %v", c.line, m, c.code)
		}
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	m := read()
	if m["id"] != float64(4) || !strings.Contains(toJSON(m["result"]), `"name":"launch"`) {
		t.Fatalf("tools/list after the malformed lines: %v", m)
	}
	inW.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("the server exited %d at the end of its input", code)
		}
	case <-time.After(30 * time.Second):
		t.Error("the server did not end with its input")
	}
}

func toJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
