package run

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// An agent's own hooks are its first channel (issue 41): Claude Code runs
// the commands its settings name at each event of its session, with the
// event as JSON on standard input. flume gives each run it starts hooks of
// its own (--settings, for that run alone) that append each event, in a
// small form, to the run's events file beside its prompt. The file is read
// before the transcript and the screen: a permission request is known the
// moment the program asks, in the program's own words, whatever its
// dialog looks like on screen.

// Claude Code's hook events flume listens to, beside the guard's
// PreToolUse: the ones that open a wait for a person and the ones that
// end it.
const (
	EventPermission   = "PermissionRequest"
	EventNotification = "Notification"
	EventPostTool     = "PostToolUse"
	EventPostFailure  = "PostToolUseFailure"
	EventPrompt       = "UserPromptSubmit"
	EventStop         = "Stop"
	EventSessionEnd   = "SessionEnd"
)

// HookEvents are the events flume's run hooks record, in Claude Code's
// names.
var HookEvents = []string{EventPermission, EventNotification, EventPostTool, EventPostFailure, EventPrompt, EventStop, EventSessionEnd}

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
	// Permission is the program's own words of a permission it asked
	// for and nobody has answered yet: no tool ran, no prompt was taken,
	// no turn or session ended since. "" when none waits.
	Permission string
	// Asked is when the pending permission was asked.
	Asked time.Time
	// Stopped is when the program last said its turn ended, zero when
	// it has not since its last prompt or tool.
	Stopped time.Time
	// Seen: the file holds at least one event.
	Seen bool
}

// ReadEvents reads a run's events file; a file not there yet says
// nothing.
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
		ev.Seen = true
		switch {
		case e.Event == EventPermission:
			ev.Permission, ev.Asked, ev.Stopped = permissionWords(e), e.At, time.Time{}
		case e.Event == EventNotification && e.Type == "permission_prompt":
			// Claude Code's notification of the same wait carries its own
			// sentence; it is kept over the request's summary.
			ev.Permission, ev.Stopped = sanitize(e.Message), time.Time{}
			if ev.Permission == "" {
				ev.Permission = permissionWords(e)
			}
			if ev.Asked.IsZero() {
				ev.Asked = e.At
			}
		case e.Event == EventPostTool, e.Event == EventPostFailure, e.Event == EventPrompt:
			ev.Permission, ev.Asked, ev.Stopped = "", time.Time{}, time.Time{}
		case e.Event == EventStop, e.Event == EventSessionEnd:
			ev.Permission, ev.Asked, ev.Stopped = "", time.Time{}, e.At
		}
	}
	return ev, sc.Err()
}

// Pending is the permission still waiting, given when the program last
// wrote its transcript (newest, the time its newest line carries): a
// line made after the permission was asked (the tool's result, refused;
// the turn interrupted) answers it, where no hook does (Claude Code runs
// no hook when a person says no). "" when none waits.
func (ev Events) Pending(newest time.Time) string {
	if ev.Permission == "" || newest.After(ev.Asked) {
		return ""
	}
	return ev.Permission
}

// permissionWords says a permission request in the program's terms: the
// tool it wants to use and on what.
func permissionWords(e Event) string {
	s := "permission to use " + cmp.Or(e.Tool, "a tool")
	if e.What != "" {
		s += fmt.Sprintf(" (%s)", e.What)
	}
	return sanitize(s)
}

// sanitize keeps a record's words printable: control characters become
// spaces (the file is written by the agent's side).
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
