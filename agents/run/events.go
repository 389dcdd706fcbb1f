package run

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/internal/term"
)

// An agent's own hooks are its first channel (A11): Claude Code
// runs the commands its settings name at each event of its session, with
// the event as JSON on standard input. flume gives each run it starts
// hooks of its own (--settings, for that run alone) that append the events
// that open a wait for a person or end a turn, in a small form, to the
// run's events file beside its prompt. What closes a wait needs no hook of
// its own: the transcript's next line, or the composer back on the screen.
// So nothing runs at every tool call or prompt.

// Claude Code's hook events flume records, beside the guard's PreToolUse.
const (
	EventPermission   = "PermissionRequest"
	EventNotification = "Notification"
	EventStop         = "Stop"
	EventSessionEnd   = "SessionEnd"
)

// HookEvents are the events flume's run hooks record, in Claude Code's
// names.
var HookEvents = []string{EventPermission, EventNotification, EventStop, EventSessionEnd}

// Event is one hook event as the events file keeps it: what it is and
// the program's own words, never the tool's whole input (a file's
// content, a secret in a command).
type Event struct {
	At      time.Time `json:"at"`
	Event   string    `json:"event"`
	Type    string    `json:"type,omitempty"`    // a notification's type
	Message string    `json:"message,omitempty"` // the program's words
	Tool    string    `json:"tool,omitempty"`
	What    string    `json:"what,omitempty"` // the tool's file, command or address, clipped
}

// maxHookInput bounds what a hook reads of its event; maxEventsRead what a
// reader reads of an events file, from its end.
const (
	maxHookInput  = 1 << 20
	maxEventsRead = 256 << 10
)

// RecordEvent reads one hook event (Claude Code's JSON) from r and appends
// its small form to the events file at path. An event that does not read
// is recorded as what it is not: flume sees that its hook ran.
func RecordEvent(r io.Reader, path string, now time.Time) error {
	data, err := io.ReadAll(io.LimitReader(r, maxHookInput))
	if err != nil {
		return err
	}
	var in struct {
		Event   string         `json:"hook_event_name"`
		Type    string         `json:"notification_type"`
		Message string         `json:"message"`
		Tool    string         `json:"tool_name"`
		Input   map[string]any `json:"tool_input"`
	}
	e := Event{At: now.UTC()}
	if err := json.Unmarshal(data, &in); err != nil {
		e.Event = "unreadable"
	} else {
		e.Event, e.Type, e.Tool = clip(in.Event, 64), clip(in.Type, 64), clip(in.Tool, 128)
		e.Message = clip(in.Message, 400)
		for _, k := range []string{"file_path", "command", "url", "path", "pattern"} {
			if v, ok := in.Input[k].(string); ok && v != "" {
				e.What = clip(v, 200)
				break
			}
		}
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// Events is what a run's events file says of it now.
type Events struct {
	// Permission is the program's own words of the last permission it
	// asked for since its turn or session last ended; "" when none.
	// Pending says whether it still waits.
	Permission string
	// Asked is when that permission was asked.
	Asked time.Time
	// Stopped is when the program last said its turn ended.
	Stopped time.Time
}

// ReadEvents reads a run's events file; a file not there yet says
// nothing. The file is written from the agent's side: bounded, and its
// words escaped (term.Clean).
func ReadEvents(path string) (Events, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return Events{}, nil
	}
	if err != nil {
		return Events{}, err
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() > maxEventsRead {
		if _, err := f.Seek(-maxEventsRead, io.SeekEnd); err != nil {
			return Events{}, err
		}
	}
	var ev Events
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // a torn or partial line (the file is read from its end)
		}
		switch {
		case e.Event == EventPermission:
			ev.Permission, ev.Asked = permissionWords(e), e.At
		case e.Event == EventNotification && e.Type == "permission_prompt":
			// Claude Code's notification of the same wait, just after the
			// request, carries its own sentence: kept over the request's
			// summary, and its time (the later) over the request's.
			ev.Permission, ev.Asked = cmp.Or(term.Clean(e.Message), permissionWords(e)), e.At
		case e.Event == EventStop, e.Event == EventSessionEnd:
			ev.Permission, ev.Asked, ev.Stopped = "", time.Time{}, e.At
		}
	}
	return ev, sc.Err()
}

// DialogSettle is how long after a permission was asked a screen showing
// the program's composer counts as the dialog gone: the hook runs just
// before the dialog is drawn.
const DialogSettle = time.Second

// Pending is the permission that still waits, "" when none: asked and not
// answered since. An answer shows as a transcript line made after it
// (newest, the time the transcript's newest line carries: the tool's
// result, or a refusal, for which Claude Code runs no hook) or, a settle
// time after it was asked (now, the wall clock), as the program's composer
// back at the foot of its screen: Claude Code hides its composer while a
// dialog shows, and a long tool a person allowed writes no line until it
// ends.
func (ev Events) Pending(newest time.Time, screen *agent.Screen, now time.Time) string {
	switch {
	case ev.Permission == "", newest.After(ev.Asked):
		return ""
	case screen != nil && screen.Input && now.Sub(ev.Asked) >= DialogSettle:
		return ""
	}
	return ev.Permission
}

// WaitsFor is the permission a run waits for (A11): the one its own hooks
// reported and nothing since answered (Pending), else the one its
// transcript shows still asked (Codex's command outside its sandbox);
// "" for none. The engine's step and tell read it alike.
func (ev Events) WaitsFor(transcript string, newest time.Time, screen *agent.Screen, now time.Time) string {
	if p := ev.Pending(newest, screen, now); p != "" {
		return p
	}
	return transcript
}

// TurnEnded is when the program's own Stop hook said the turn that the
// transcript's newest line (newest) belongs to ended; zero when it has
// not said so since that line.
func (ev Events) TurnEnded(newest time.Time) time.Time {
	if ev.Stopped.Before(newest) {
		return time.Time{}
	}
	return ev.Stopped
}

// permissionWords says a permission request in the program's terms: the
// tool it wants to use and on what.
func permissionWords(e Event) string {
	s := "permission to use " + cmp.Or(e.Tool, "a tool")
	if e.What != "" {
		s += fmt.Sprintf(" (%s)", e.What)
	}
	return term.Clean(s)
}
