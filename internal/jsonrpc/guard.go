package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Error codes of the JSON-RPC 2.0 specification, §5.1.
const (
	ParseError     = -32700
	InvalidRequest = -32600
)

// MaxLine bounds one message: a longer line is answered as invalid and
// dropped, never buffered whole.
const MaxLine = 16 << 20

// MaxDepth bounds how deeply a message nests arrays and objects; deeper is
// a parse error. No MCP message comes near it.
const MaxDepth = 128

// Guard reads the client's messages from in and answers what it refuses on
// out; the server reads what passes from the returned reader and writes to
// the returned writer, which forwards to out. Writes to out are serialized.
// The reader ends when in does.
func Guard(in io.Reader, out io.Writer) (io.ReadCloser, io.WriteCloser) {
	g := &guard{out: out, inflight: map[string]bool{}}
	pr, pw := io.Pipe()
	go g.read(in, pw)
	return pr, &responses{g: g}
}

type guard struct {
	mu       sync.Mutex // guards out and inflight
	out      io.Writer
	inflight map[string]bool
}

// read checks each line of in and passes the good ones to the server.
func (g *guard) read(in io.Reader, server *io.PipeWriter) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 {
			if ok := g.check(line); ok {
				if _, werr := server.Write(append(line, '\n')); werr != nil {
					return
				}
			}
		}
		if err != nil {
			server.CloseWithError(nil)
			return
		}
	}
}

// readLine reads one line without its newline; a line past MaxLine is
// returned as a marker and the rest of it skipped.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		if len(line)+len(part) > MaxLine {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			return []byte{0}, errOrNil(err) // answered as not JSON
		}
		line = append(line, part...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

func errOrNil(err error) error {
	if errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// message is what the guard reads of a JSON-RPC message.
type message struct {
	JSONRPC *string          `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id"`
	Method  *json.RawMessage `json:"method"`
	Result  *json.RawMessage `json:"result"`
	Error   *json.RawMessage `json:"error"`
}

// check reports whether line may reach the server, answering it when not.
func (g *guard) check(line []byte) bool {
	trimmed := bytes.TrimSpace(line)
	if bytes.IndexByte(trimmed, 0) >= 0 || !json.Valid(trimmed) || depth(trimmed) > MaxDepth {
		g.answer(nil, ParseError, "Parse error: the message is not JSON")
		return false
	}
	if trimmed[0] == '[' {
		g.answer(nil, InvalidRequest, "Invalid Request: batches are not supported")
		return false
	}
	var m message
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &m) != nil {
		g.answer(nil, InvalidRequest, "Invalid Request: not a JSON-RPC object")
		return false
	}
	if m.JSONRPC == nil || *m.JSONRPC != "2.0" {
		g.answer(validID(m.ID), InvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`)
		return false
	}
	if m.ID != nil && validID(m.ID) == nil && string(*m.ID) != "null" {
		g.answer(nil, InvalidRequest, "Invalid Request: an id must be a string, an integer or null")
		return false
	}
	if m.Method != nil {
		var name string
		if json.Unmarshal(*m.Method, &name) != nil {
			g.answer(validID(m.ID), InvalidRequest, `Invalid Request: "method" must be a string`)
			return false
		}
		if m.ID != nil && string(*m.ID) != "null" {
			// A request: its id must not be one still in flight, or its
			// answer could never be told apart (and the SDK drops it).
			key := idKey(*m.ID)
			g.mu.Lock()
			dup := g.inflight[key]
			if !dup {
				g.inflight[key] = true
			}
			g.mu.Unlock()
			if dup {
				g.answer(m.ID, InvalidRequest, fmt.Sprintf("Invalid Request: id %s is already in use by a request in flight", *m.ID))
				return false
			}
		}
		return true
	}
	if m.Result == nil && m.Error == nil {
		g.answer(validID(m.ID), InvalidRequest, "Invalid Request: neither a request, a notification nor a response")
		return false
	}
	return true // a response to the server's own request
}

// validID is id when it is one this server takes (a string, or an integer
// that fits 64 bits: JSON-RPC says a number id should have no fraction),
// else nil.
func validID(id *json.RawMessage) *json.RawMessage {
	if id == nil || len(*id) == 0 {
		return nil
	}
	if (*id)[0] == '"' {
		var s string
		if json.Unmarshal(*id, &s) != nil {
			return nil
		}
		return id
	}
	if _, err := strconv.ParseInt(string(*id), 10, 64); err != nil {
		return nil
	}
	return id
}

// idKey is an id as the in-flight set keys it: a number and a string of
// the same digits are different ids.
func idKey(id json.RawMessage) string {
	var n json.Number
	if json.Unmarshal(id, &n) == nil && id[0] != '"' {
		return "n:" + n.String()
	}
	return "s:" + string(id)
}

// depth is how deeply data nests arrays and objects (strings skipped).
func depth(data []byte) int {
	d, deepest, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			d++
			deepest = max(deepest, d)
		case c == ']' || c == '}':
			d--
		}
	}
	return deepest
}

// answer writes an error response with id (null when nil).
func (g *guard) answer(id *json.RawMessage, code int, text string) {
	idText := json.RawMessage("null")
	if id != nil {
		idText = *id
	}
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": idText, "error": map[string]any{"code": code, "message": text}})
	g.mu.Lock()
	defer g.mu.Unlock()
	_, _ = g.out.Write(append(data, '\n')) // a client that is gone reads no answer
}

// responses is the server's side of out: each response it writes ends its
// request's time in flight.
type responses struct {
	g    *guard
	rest []byte
}

func (w *responses) Write(p []byte) (int, error) {
	w.rest = append(w.rest, p...)
	for {
		i := bytes.IndexByte(w.rest, '\n')
		if i < 0 {
			break
		}
		line := w.rest[:i+1]
		var m message
		if json.Unmarshal(line, &m) == nil && m.Method == nil && m.ID != nil && (m.Result != nil || m.Error != nil) {
			w.g.mu.Lock()
			delete(w.g.inflight, idKey(*m.ID))
			w.g.mu.Unlock()
		}
		w.g.mu.Lock()
		_, err := w.g.out.Write(line)
		w.g.mu.Unlock()
		w.rest = w.rest[i+1:]
		if err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (w *responses) Close() error { return nil }
