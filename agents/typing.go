package agent

import (
	"context"
	"strings"
)

// Everything flume types into an agent's pane goes through this file: the
// screen is read first and text is typed only into the program's own ready
// composer (X3). The stage engine and the workspace worker share it.

// MaxSends is how often a prompt is sent at most: once at the start, and
// once more when it did not show in the transcript in time (A3).
const MaxSends = 2

// Resent is what a second sending of an unconfirmed prompt found and did.
type Resent struct {
	// Exited: the program is gone; nothing typed.
	Exited bool
	// Busy: a turn is in progress (slow is not failed); nothing typed.
	Busy bool
	// Blocked holds the screen's words when it is not the ready composer
	// (a dialog, an error); nothing typed.
	Blocked string
	// GaveUp: the prompt was sent MaxSends times already; nothing typed.
	GaveUp bool
	// Sent: the prompt was typed, or, already in the composer, submitted.
	Sent bool
}

// ResendPrompt sends prompt once more to the agent in pane, whose transcript
// has not shown it within the confirmation window (A3), after sends
// sendings so far. The screen decides: a program that exited, is busy,
// shows anything but its ready composer, or was sent the prompt MaxSends
// times already gets nothing. A composer that already holds the prompt
// (typed, never submitted) gets Enter only, so the prompt never arrives
// twice.
func ResendPrompt(ctx context.Context, panes PaneHost, pane, format, prompt string, sends int) (Resent, error) {
	if !panes.Alive(ctx, pane) {
		return Resent{Exited: true}, nil
	}
	text, err := panes.Capture(ctx, pane)
	if err != nil {
		return Resent{}, err
	}
	screen := ReadScreen(format, text)
	switch {
	case screen.Busy && !screen.Ready:
		return Resent{Busy: true}, nil
	case !screen.Ready:
		return Resent{Blocked: screen.Words}, nil
	case sends >= MaxSends:
		return Resent{GaveUp: true}, nil
	}
	first, _, _ := strings.Cut(prompt, "\n")
	if screen.Composer != "" && (strings.HasPrefix(first, screen.Composer) || strings.HasPrefix(screen.Composer, "[Pasted text")) {
		err = panes.SendKeys(ctx, pane, "Enter")
	} else {
		err = panes.Send(ctx, pane, prompt)
	}
	if err != nil {
		return Resent{}, err
	}
	return Resent{Sent: true}, nil
}

// Tell types text into the agent in pane only when its screen is the
// ready composer (X3). A busy agent gets nothing yet (sent false, blocked
// ""); any other screen gets nothing and blocked holds its words.
func Tell(ctx context.Context, panes PaneHost, pane, format, text string) (sent bool, blocked string, err error) {
	capture, err := panes.Capture(ctx, pane)
	if err != nil {
		return false, "", err
	}
	switch screen := ReadScreen(format, capture); {
	case screen.Ready:
	case screen.Busy:
		return false, "", nil
	default:
		return false, screen.Words, nil
	}
	if err := panes.Send(ctx, pane, text); err != nil {
		return false, "", err
	}
	return true, "", nil
}
