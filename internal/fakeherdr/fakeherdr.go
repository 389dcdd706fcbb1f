package fakeherdr

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"sync"
)

// Call is one request the server got.
type Call struct {
	Method string         `json:"method"`
	Params map[string]any `json:"params"`
}

// Server is a fake herdr.
type Server struct {
	// Status is what agent.get reports: idle, working, blocked, ….
	Status string
	// Log, when set, gets every call as a JSON line.
	Log io.Writer

	mu     sync.Mutex
	calls  []Call
	reads  map[string]int
	panes  int
	closed map[string]bool
	l      net.Listener
}

// Listen serves on a Unix socket at path until Close.
func (s *Server) Listen(path string) error {
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	s.l = l
	s.reads, s.closed = map[string]int{}, map[string]bool{}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go s.handle(conn)
		}
	}()
	return nil
}

// Close stops serving.
func (s *Server) Close() error { return s.l.Close() }

// Calls returns the calls so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *Server) handle(conn net.Conn) {
	defer conn.Close()
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var req struct {
			ID     string         `json:"id"`
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			return
		}
		result, fail := s.answer(req.Method, req.Params)
		resp := map[string]any{"id": req.ID}
		if fail != nil {
			resp["error"] = fail
		} else {
			resp["result"] = result
		}
		data, _ := json.Marshal(resp)
		_, _ = conn.Write(append(data, '\n')) // a client that hung up reads no answer
	}
}

func (s *Server) answer(method string, params map[string]any) (any, map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{method, params})
	if s.Log != nil {
		data, _ := json.Marshal(Call{method, params})
		_, _ = s.Log.Write(append(data, '\n')) // a test that reads the log fails on a line missing
	}
	pane, _ := params["pane_id"].(string)
	if pane == "" {
		pane, _ = params["target"].(string)
	}
	if pane != "" && s.closed[pane] {
		return nil, map[string]string{"code": "not_found", "message": "pane not found"}
	}
	switch method {
	case "ping":
		return map[string]any{"type": "pong"}, nil
	case "workspace.create":
		s.panes++
		id := string(rune('0' + s.panes))
		return map[string]any{"workspace": map[string]any{"workspace_id": "w" + id}, "root_pane": map[string]any{"pane_id": "w" + id + ":p1"}}, nil
	case "workspace.close":
		ws, _ := params["workspace_id"].(string)
		s.closed[ws+":p1"] = true
		return map[string]any{}, nil
	case "pane.read":
		s.reads[pane]++
		text := ""
		if s.reads[pane] > 1 {
			text = "user@host:~/repo$ "
		}
		return map[string]any{"read": map[string]any{"text": text, "truncated": false}}, nil
	case "pane.process_info":
		return map[string]any{"shell_pid": 100, "foreground_pgid": 200}, nil
	case "agent.get":
		return map[string]any{"agent": map[string]any{"agent_status": s.Status}}, nil
	}
	return map[string]any{}, nil
}
