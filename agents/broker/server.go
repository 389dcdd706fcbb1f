package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/git-flume/git-flume/internal/proc"
)

// maxRunning bounds the requests of one inbox running at once (wait
// blocks): the ones after wait in the inbox for a turn.
const maxRunning = 4

// Server serves one run's inbox for its place's watcher.
type Server struct {
	inbox  string
	run    func(context.Context, Request) Result
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	busy   map[string]bool // the requests this server runs, by id
}

// NewServer serves inbox, running each checked request with run; ctx
// ending, or Close, ends every run still going.
func NewServer(ctx context.Context, inbox string, run func(context.Context, Request) Result) *Server {
	s := &Server{inbox: inbox, run: run, busy: map[string]bool{}}
	s.ctx, s.cancel = context.WithCancel(ctx)
	return s
}

// Inbox is the folder the server serves.
func (s *Server) Inbox() string { return s.inbox }

// Close ends the runs still going (their agents are told the run ended)
// and waits for them. A nil server has nothing to close.
func (s *Server) Close() {
	if s == nil {
		return
	}
	s.cancel()
	s.wg.Wait()
}

// Serve takes what waits in the inbox: each new request starts running
// (up to maxRunning at once), and a request taken by a watcher that ended
// without answering is answered so, never run twice.
func (s *Server) Serve() {
	entries, err := os.ReadDir(s.inbox)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if id, ok := strings.CutSuffix(name, takenSuffix); ok && validID(id) && !s.running(id) {
			// A run of this process that answered since the folder was
			// read removed its taken file (pid 0: unread) and left its
			// answer, which is never replaced.
			_, answered := os.Lstat(filepath.Join(s.inbox, id+resSuffix))
			if pid := takenBy(filepath.Join(s.inbox, name)); pid > 0 && pid != os.Getpid() && !proc.Alive(pid) && answered != nil {
				s.answer(id, Result{Code: 1, Stderr: fmt.Sprintf("git-flume: the watcher that ran this (pid %d) ended before it answered: what it did is unknown; see git flume status before running it again\n", pid)})
			}
			continue
		}
		id, ok := strings.CutSuffix(name, reqSuffix)
		if !ok || !validID(id) || s.running(id) || s.count() >= maxRunning {
			continue
		}
		s.start(id)
	}
}

func (s *Server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.busy)
}

func (s *Server) running(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busy[id]
}

// start takes request id (its taken file names this process) and runs it
// in a goroutine of its own.
func (s *Server) start(id string) {
	path := filepath.Join(s.inbox, id+reqSuffix)
	data, err := readFile(path, maxRequest)
	if err != nil {
		_ = os.Remove(path)
		return // removed by its agent, or not a request anyone wrote as one
	}
	if writeNew(s.inbox, id+takenSuffix, []byte(strconv.Itoa(os.Getpid()))) != nil {
		return
	}
	_ = os.Remove(path)
	s.mu.Lock()
	s.busy[id] = true
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		var req Request
		res := Result{Code: 2}
		if err := json.Unmarshal(data, &req); err != nil {
			res.Stderr = fmt.Sprintf("git-flume: the request does not read: %v\n", err)
		} else if err := req.Check(); err != nil {
			res.Code = 4
			res.Stderr = fmt.Sprintf("git-flume: refused by the place's watcher: %v\n", err)
		} else {
			res = s.run(s.ctx, req)
		}
		s.answer(id, res)
		s.mu.Lock()
		delete(s.busy, id)
		s.mu.Unlock()
	}()
}

// answer writes request id's result, bounded, and drops its taken file.
func (s *Server) answer(id string, res Result) {
	res.Stdout, res.Stderr = bound(res.Stdout), bound(res.Stderr)
	data, _ := json.Marshal(res)
	if writeNew(s.inbox, id+resSuffix, data) != nil {
		return // taken still: once this watcher ends, the next says it was lost
	}
	_ = os.Remove(filepath.Join(s.inbox, id+takenSuffix))
}

func bound(s string) string {
	if len(s) <= maxOutput {
		return s
	}
	return s[:maxOutput] + "\n… (cut by the place's watcher)\n"
}

// validID is a request id as newID makes them.
func validID(id string) bool {
	if len(id) != 24 {
		return false
	}
	for _, c := range id {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}
