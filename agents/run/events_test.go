package run

import (
	"github.com/git-flume/git-flume/agents"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEventsSayWhatWaits_A11: the run's own hooks, recorded one event a
// line, say a permission waits, in the program's words, until the
// transcript has a line made after it (a tool's result, a refusal: Claude
// Code runs no hook when a person says no), the program's composer is
// back on its screen a settle time after it was asked (a long tool a
// person allowed), or the turn or session ended; a turn's end counts for
// the transcript's newest turn only; what the agent's side wrote reaches
// a reason escaped; a tool's input is kept only as a clipped name of what
// it acts on.
func TestEventsSayWhatWaits_A11(t *testing.T) {
	path := filepath.Join(t.TempDir(), "1-code-1.events.jsonl")
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	record := func(at time.Duration, json string) {
		t.Helper()
		if err := RecordEvent(strings.NewReader(json), path, t0.Add(at)); err != nil {
			t.Fatal(err)
		}
	}
	read := func() Events {
		t.Helper()
		ev, err := ReadEvents(path)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	composer := &agent.Screen{Input: true, Ready: true}
	unknown := &agent.Screen{Words: "Darf ich?"}
	if ev := read(); ev != (Events{}) {
		t.Fatalf("no file yet: %+v", ev)
	}
	record(time.Second, `{"hook_event_name":"PermissionRequest","tool_name":"Write","tool_input":{"file_path":"notes.txt","content":"SECRET"}}`)
	if got := read().Pending(t0, unknown, t0.Add(time.Minute)); got != "permission to use Write (notes.txt)" {
		t.Fatalf("pending %q", got)
	}
	record(2*time.Second, `{"hook_event_name":"Notification","notification_type":"permission_prompt","message":"Claude needs your\u001b[31m permission to use Write"}`)
	ev := read()
	if got := ev.Pending(t0, nil, t0.Add(time.Minute)); got != `Claude needs your\x1b[31m permission to use Write` {
		t.Fatalf("pending %q", got)
	}
	// a transcript line made after it was asked answers it; one made
	// before (the tool call that asked, flushed late) does not
	if got := ev.Pending(t0.Add(3*time.Second), nil, t0.Add(time.Minute)); got != "" {
		t.Fatalf("answered in the transcript, still pending %q", got)
	}
	if got := ev.Pending(t0.Add(time.Second), nil, t0.Add(time.Minute)); got == "" {
		t.Fatal("a line made before the ask answered it")
	}
	// the composer back on screen answers it, but not while the dialog
	// may still be being drawn
	if got := ev.Pending(t0, composer, t0.Add(2*time.Second+DialogSettle)); got != "" {
		t.Fatalf("the composer is back, still pending %q", got)
	}
	if got := ev.Pending(t0, composer, t0.Add(2*time.Second+DialogSettle/2)); got == "" {
		t.Fatal("a composer seen just as the dialog was asked answered it")
	}
	long := strings.Repeat("x", 500)
	record(4*time.Second, `{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"`+long+`"}}`)
	if got := read().Pending(t0.Add(3*time.Second), nil, t0); len(got) > 260 || !strings.HasPrefix(got, "permission to use Bash (xxx") {
		t.Fatalf("a new ask after an answered one, a long command: %q", got)
	}
	record(5*time.Second, `{"hook_event_name":"Stop","stop_hook_active":false}`)
	ev = read()
	if ev.Pending(time.Time{}, nil, t0) != "" || !ev.TurnEnded(t0.Add(4*time.Second)).Equal(t0.Add(5*time.Second)) {
		t.Fatalf("after the turn ended: %+v", ev)
	}
	// a transcript line after the Stop is a new turn: not ended by it
	if !ev.TurnEnded(t0.Add(6 * time.Second)).IsZero() {
		t.Fatal("a Stop before the newest line ended its turn")
	}
	record(6*time.Second, `not json`)
	if b := readAll(t, path); strings.Contains(b, "SECRET") || !strings.Contains(b, `"event":"unreadable"`) {
		t.Fatalf("events file:\n%s", b)
	}
}

func readAll(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
