package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEventsSayWhatWaits_A11: the run's own hooks, recorded one event a
// line, say a permission waits in the program's words until a tool ran, a
// prompt was taken, the turn or session ended, or the transcript moved on
// after it (a person said no: Claude Code runs no hook then); a turn's end
// is kept with its time; control characters never reach a reason; a
// tool's input is kept only as a clipped name of what it acts on.
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
	if ev := read(); ev.Seen || ev.Permission != "" {
		t.Fatalf("no file yet: %+v", ev)
	}
	record(0, `{"hook_event_name":"UserPromptSubmit","prompt":"do it"}`)
	long := strings.Repeat("x", 500)
	record(time.Second, `{"hook_event_name":"PermissionRequest","tool_name":"Write","tool_input":{"file_path":"notes.txt","content":"SECRET"}}`)
	ev := read()
	if ev.Pending(t0) != "permission to use Write (notes.txt)" {
		t.Fatalf("pending %q", ev.Pending(t0))
	}
	record(2*time.Second, `{"hook_event_name":"Notification","notification_type":"permission_prompt","message":"Claude needs your\u001b[31m permission to use Write"}`)
	ev = read()
	if got := ev.Pending(t0.Add(time.Second / 2)); got != "Claude needs your [31m permission to use Write" {
		t.Fatalf("pending %q", got)
	}
	// a transcript line made after it was asked answers it
	if got := ev.Pending(t0.Add(3 * time.Second)); got != "" {
		t.Fatalf("answered in the transcript, still pending %q", got)
	}
	record(3*time.Second, `{"hook_event_name":"PostToolUse","tool_name":"Write"}`)
	if got := read().Pending(time.Time{}); got != "" {
		t.Fatalf("after the tool ran: pending %q", got)
	}
	record(4*time.Second, `{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"`+long+`"}}`)
	if got := read().Pending(time.Time{}); len(got) > 260 || !strings.HasPrefix(got, "permission to use Bash (xxx") {
		t.Fatalf("a long command: %q", got)
	}
	record(5*time.Second, `{"hook_event_name":"Stop","stop_hook_active":false}`)
	ev = read()
	if ev.Pending(time.Time{}) != "" || !ev.Stopped.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("after the turn ended: %+v", ev)
	}
	record(6*time.Second, `not json`)
	record(7*time.Second, `{"hook_event_name":"UserPromptSubmit"}`)
	if ev := read(); !ev.Stopped.IsZero() {
		t.Fatalf("a new prompt: still stopped %v", ev.Stopped)
	}
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
