package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// run feeds lines to a guard and returns what the server read and what
// the client got back; the server answers nothing unless answer says so.
func run(t *testing.T, lines []string, answer func(server io.Writer, msg string)) (read []string, got []map[string]any) {
	t.Helper()
	var out syncBuffer
	in := strings.NewReader(strings.Join(lines, "\n") + "\n")
	sr, sw := Guard(in, &out)
	sc := bufio.NewScanner(sr)
	sc.Buffer(nil, MaxLine+1)
	for sc.Scan() {
		read = append(read, sc.Text())
		if answer != nil {
			answer(sw, sc.Text())
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("the guard wrote a line that is not JSON: %q", l)
		}
		got = append(got, m)
	}
	return read, got
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestGuardAnswersWhatItRefuses_O2: each malformed message gets the
// error the JSON-RPC 2.0 specification names, with its id where it has a
// usable one, and never reaches the server; the good ones around it do.
func TestGuardAnswersWhatItRefuses_O2(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	cases := []struct {
		line string
		code float64
		id   any
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, ParseError, nil},
		{"\x00", ParseError, nil},
		{`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"a\u0000b"}}` + "\x00", ParseError, nil},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, InvalidRequest, nil},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, InvalidRequest, nil},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, InvalidRequest, nil},
		{`{"jsonrpc":"2.0","id":3,"method":` + deep + `}`, ParseError, nil},
		{`[{"jsonrpc":"2.0","id":4,"method":"ping"}]`, InvalidRequest, nil},
		{`{"jsonrpc":"1.0","id":5,"method":"ping"}`, InvalidRequest, float64(5)},
		{`{"jsonrpc":"2.0","id":6,"method":7}`, InvalidRequest, float64(6)},
		{`{"jsonrpc":"2.0","id":7}`, InvalidRequest, float64(7)},
		{`"just a string"`, InvalidRequest, nil},
		{`12`, InvalidRequest, nil},
	}
	lines := []string{`{"jsonrpc":"2.0","id":"first","method":"ping"}`}
	for _, c := range cases {
		lines = append(lines, c.line)
	}
	lines = append(lines, `{"jsonrpc":"2.0","id":"last","method":"ping"}`)
	read, got := run(t, lines, nil)
	if len(read) != 2 || !strings.Contains(read[0], `"first"`) || !strings.Contains(read[1], `"last"`) {
		t.Fatalf("the server read %q; want only the two good requests", read)
	}
	if len(got) != len(cases) {
		t.Fatalf("%d answers for %d refused messages: %v", len(got), len(cases), got)
	}
	for i, c := range cases {
		e, _ := got[i]["error"].(map[string]any)
		if e == nil || e["code"] != c.code || got[i]["id"] != c.id || got[i]["jsonrpc"] != "2.0" {
			t.Errorf("%q answered %v; want code %v, id %v", c.line, got[i], c.code, c.id)
		}
	}
}

// TestGuardRefusesAnIDInFlight_O2: a request whose id is still in
// flight is refused with that id; once the server answered it, the id may
// be used again.
func TestGuardRefusesAnIDInFlight_O2(t *testing.T) {
	var out syncBuffer
	pr, pw := io.Pipe()
	sr, sw := Guard(pr, &out)
	sc := bufio.NewScanner(sr)
	next := func() string {
		if !sc.Scan() {
			t.Fatal("the server read nothing")
		}
		return sc.Text()
	}
	send := func(s string) { pw.Write([]byte(s + "\n")) }
	go send(`{"jsonrpc":"2.0","id":9,"method":"slow"}`)
	if !strings.Contains(next(), `"slow"`) {
		t.Fatal("first request not passed")
	}
	send(`{"jsonrpc":"2.0","id":9,"method":"again"}`)
	send(`{"jsonrpc":"2.0","id":"9","method":"a string id is another id"}`)
	if !strings.Contains(next(), "another id") {
		t.Fatal("a string id of the same digits was refused")
	}
	waitFor(t, func() bool { return strings.Contains(out.String(), "already in use") })
	if !strings.Contains(out.String(), `"id":9`) || !strings.Contains(out.String(), `"code":-32600`) {
		t.Fatalf("answer %q", out.String())
	}
	sw.Write([]byte(`{"jsonrpc":"2.0","id":9,"result":{}}` + "\n"))
	go send(`{"jsonrpc":"2.0","id":9,"method":"reused after its answer"}`)
	if !strings.Contains(next(), "reused after") {
		t.Fatal("an answered id stayed in use")
	}
	pw.Close()
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for i := 0; i < 200 && !ok(); i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if !ok() {
		t.Fatal("timed out")
	}
}

// FuzzGuardNeverStopsServing: whatever a client sends, the guard writes
// only JSON, and a good request sent after it still reaches the server.
func FuzzGuardNeverStopsServing(f *testing.F) {
	for _, s := range []string{"", "{", "\x00", `{"id":{}}`, `[[[[`, `{"jsonrpc":"2.0","id":1,"method":"x"}`, "\xff\xfe", `{"jsonrpc":"2.0","id":1e999,"method":"x"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		line = strings.ReplaceAll(line, "\n", " ")
		read, _ := run(t, []string{line, `{"jsonrpc":"2.0","id":"after","method":"ping"}`}, nil)
		if len(read) == 0 || !strings.Contains(read[len(read)-1], `"after"`) {
			t.Fatalf("after %q the good request did not reach the server: %q", line, read)
		}
	})
}
