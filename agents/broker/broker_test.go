package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveUntil serves inbox with s until done is closed.
func serveUntil(s *Server, done <-chan struct{}) {
	for {
		s.Serve()
		select {
		case <-done:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func TestForwardRunsTheVerbInTheServer_A12(t *testing.T) {
	inbox := t.TempDir()
	var got Request
	s := NewServer(context.Background(), inbox, func(_ context.Context, r Request) Result {
		got = r
		return Result{Code: 3, Stdout: "out " + strings.Join(r.Args, " "), Stderr: "err"}
	})
	defer s.Close()
	done := make(chan struct{})
	go serveUntil(s, done)
	var out, errb bytes.Buffer
	code := Forward(context.Background(), inbox, []string{"accept", "fix--one"}, "/some/dir", &out, &errb)
	close(done)
	if code != 3 || out.String() != "out accept fix--one" || errb.String() != "err" {
		t.Fatalf("Forward = %d, %q, %q; want 3, the verb's output", code, out.String(), errb.String())
	}
	if got.Dir != "/some/dir" {
		t.Errorf("the server ran it in %q, want the caller's folder", got.Dir)
	}
	if entries, _ := os.ReadDir(inbox); len(entries) != 0 {
		t.Errorf("the inbox keeps %d files after the answer was read, want none", len(entries))
	}
}

func TestRequestCheckRefusesWhatAnAgentMayNotAsk_A12(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"drop", "fix--one"},
		{"tidy"},
		{"launch", "--repo", "/elsewhere", "--kind", "fix"},
		{"launch", "--repo=/elsewhere"},
		{"accept", "-repo", "/elsewhere", "x"},
		{"accept", "a\x00b"},
		append([]string{"wait"}, make([]string, maxArgs)...),
	} {
		if err := (Request{Args: args}).Check(); err == nil {
			t.Errorf("Check(%q) = nil, want refused", args)
		}
	}
	if err := (Request{Args: []string{"launch", "--kind", "question", "--brief", "--repo is a word here"}}).Check(); err != nil {
		t.Errorf("a brief that mentions --repo is refused: %v", err)
	}
}

// serveOnce writes request data as id in inbox, serves it, and returns
// the answer.
func serveOnce(t *testing.T, inbox, id string, data []byte) Result {
	t.Helper()
	if err := os.WriteFile(filepath.Join(inbox, id+reqSuffix), data, 0o644); err != nil {
		t.Fatal(err)
	}
	s := NewServer(context.Background(), inbox, func(context.Context, Request) Result { return Result{Stdout: "ran"} })
	s.Serve()
	s.Close()
	res, err := await(context.Background(), inbox, id)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestServerRefusesAVerbNotBrokered_A12(t *testing.T) {
	inbox := t.TempDir()
	res := serveOnce(t, inbox, newID(), []byte(`{"args":["drop","fix--one"],"dir":"/"}`))
	if res.Code != 4 || res.Stdout != "" || !strings.Contains(res.Stderr, "only launch, wait") {
		t.Errorf("answer = %+v, want refused (4) with nothing run", res)
	}
}

func TestServerNeverWritesThroughALink_A12(t *testing.T) {
	inbox, outside := t.TempDir(), filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := newID()
	if err := os.Symlink(outside, filepath.Join(inbox, id+resSuffix)); err != nil {
		t.Fatal(err)
	}
	// the link is where the answer goes; the server renames its answer
	// over it
	if err := os.WriteFile(filepath.Join(inbox, id+reqSuffix), []byte(`{"args":["wait","x"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := NewServer(context.Background(), inbox, func(context.Context, Request) Result { return Result{Stdout: "ran"} })
	s.Serve()
	s.Close()
	if data, _ := os.ReadFile(outside); string(data) != "keep" {
		t.Errorf("the file the link named holds %q, want it untouched", data)
	}
	info, err := os.Lstat(filepath.Join(inbox, id+resSuffix))
	if err != nil || !info.Mode().IsRegular() {
		t.Errorf("the answer is %v (%v), want a regular file in place of the link", info, err)
	}
}

func TestServerReadsNoFIFOAndNoLink_A12(t *testing.T) {
	inbox := t.TempDir()
	fifo, link := newID(), newID()
	if err := syscall.Mkfifo(filepath.Join(inbox, fifo+reqSuffix), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(`{"args":["wait","x"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(inbox, link+reqSuffix)); err != nil {
		t.Fatal(err)
	}
	ran := false
	s := NewServer(context.Background(), inbox, func(context.Context, Request) Result { ran = true; return Result{} })
	finished := make(chan struct{})
	go func() { s.Serve(); s.Close(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve blocked on a FIFO in the inbox")
	}
	if ran {
		t.Error("a request read through a link was run")
	}
}

func TestARequestWhoseWatcherEndedIsAnsweredNeverRunAgain_A12(t *testing.T) {
	inbox := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	id := newID()
	taken := filepath.Join(inbox, id+takenSuffix)
	if err := os.WriteFile(taken, []byte(strconv.Itoa(dead.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	ran := false
	s := NewServer(context.Background(), inbox, func(context.Context, Request) Result { ran = true; return Result{} })
	s.Serve()
	s.Close()
	data, err := os.ReadFile(filepath.Join(inbox, id+resSuffix))
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := json.Unmarshal(data, &res); err != nil || res.Code != 1 || !strings.Contains(res.Stderr, "ended before it answered") {
		t.Errorf("answer = %s (%v), want status 1 saying its watcher ended", data, err)
	}
	if ran {
		t.Error("a request another watcher took was run again")
	}
}

func TestInboxOnlyInASandboxForABrokeredVerb_A12(t *testing.T) {
	env := []string{"FLUME_SANDBOX=landlock", InboxVar + "=/in"}
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{env, []string{"launch", "--kind", "fix"}, "/in"},
		{env, []string{"status"}, ""},
		{[]string{InboxVar + "=/in"}, []string{"launch"}, ""},
		{[]string{"FLUME_SANDBOX=landlock"}, []string{"launch"}, ""},
	} {
		if got := Inbox(c.env, c.args); got != c.want {
			t.Errorf("Inbox(%q, %q) = %q, want %q", c.env, c.args, got, c.want)
		}
	}
}

func TestARequestAnotherLiveWatcherRunsIsLeftToIt_A12(t *testing.T) {
	inbox := t.TempDir()
	id := newID()
	if err := os.WriteFile(filepath.Join(inbox, id+takenSuffix), []byte(strconv.Itoa(os.Getppid())), 0o644); err != nil {
		t.Fatal(err)
	}
	s := NewServer(context.Background(), inbox, func(context.Context, Request) Result { return Result{} })
	s.Serve()
	s.Close()
	if _, err := os.Lstat(filepath.Join(inbox, id+resSuffix)); err == nil {
		t.Error("a request a live watcher runs was answered as if that watcher had ended")
	}
}

// TestAnAnswerAtItsBoundsIsRead_A12: the longest answer a watcher writes
// (two outputs at their bound, every byte escaped by JSON) reaches the
// agent, cut where the watcher cut it; none leaves it waiting.
func TestAnAnswerAtItsBoundsIsRead_A12(t *testing.T) {
	inbox := t.TempDir()
	noisy := strings.Repeat("\x01", 2*maxOutput)
	s := NewServer(context.Background(), inbox, func(context.Context, Request) Result {
		return Result{Code: 0, Stdout: noisy, Stderr: noisy}
	})
	defer s.Close()
	done := make(chan struct{})
	go serveUntil(s, done)
	defer close(done)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := Forward(ctx, inbox, []string{"wait", "fix--one"}, "/", &out, &errb)
	if code != 0 || out.Len() < maxOutput || !strings.HasSuffix(out.String(), "(cut by the place's watcher)\n") {
		t.Errorf("Forward = %d with %d bytes out (%q…), want the cut output", code, out.Len(), errb.String()[:min(80, errb.Len())])
	}
}

// TestAnAnswerIsNeverReplaced_A12: a watcher's pass that read the inbox
// while one of its own runs answered (its taken file gone by the time it
// is read, the answer there) leaves that answer as it is: the agent reads
// what its verb did, never "the watcher ended".
func TestAnAnswerIsNeverReplaced_A12(t *testing.T) {
	inbox := t.TempDir()
	answered, unread := newID(), newID()
	// a run of a watcher gone, whose answer is there nonetheless
	dead := deadPID(t)
	if err := os.WriteFile(filepath.Join(inbox, answered+takenSuffix), []byte(strconv.Itoa(dead)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inbox, answered+resSuffix), []byte(`{"code":0,"stdout":"done\n"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// a taken file that cannot be read as a watcher's pid
	if err := os.Mkdir(filepath.Join(inbox, unread+takenSuffix), 0o755); err != nil {
		t.Fatal(err)
	}
	s := NewServer(context.Background(), inbox, func(context.Context, Request) Result { return Result{} })
	s.Serve()
	s.Close()
	if data, err := os.ReadFile(filepath.Join(inbox, answered+resSuffix)); err != nil || !strings.Contains(string(data), "done") {
		t.Errorf("the answer was replaced: %q (%v)", data, err)
	}
	if _, err := os.Lstat(filepath.Join(inbox, unread+resSuffix)); err == nil {
		t.Error("a request whose watcher is unknown was answered as ended")
	}
}

// deadPID is the pid of a process that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}
