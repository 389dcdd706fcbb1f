package run

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/launchfile"
)

// Sources are where a step reads a run from, beside its record.
type Sources struct {
	// Panes is the pane host the agent runs in; nil for an operator's
	// (print) agent.
	Panes agent.PaneHost
	// Vars find the agent's transcript: its session, place and home.
	Vars agent.Vars
	// Taken are the transcripts earlier runs of the same place claimed.
	Taken map[string]bool
	// Now is the timers' clock.
	Now time.Time
	// Deliverable reads the run's deliverable in git (K6); nil when its
	// deliverable is the ended turn (Policy.TurnDelivers). It runs before
	// the transcript is read, so a transcript read after a commit was
	// seen holds every line written before it; an agent whose transcript
	// lags its work (Claude Code's flush) is waited for in Decide (A3).
	Deliverable func(ctx context.Context) (done bool, what string, err error)
	// Place says why the run's place is no longer its own worktree, ""
	// while it is; nil when the run has no place of its own to lose.
	Place func() string
	// Reminder is the one reminder the run may have been told (A8).
	Reminder string
	// Final reads what a run whose agent ended left in its transcript
	// too (explain's reading): the engine decides nothing more of it, but
	// a person asks whether its prompt was shown and how its last turn
	// ended.
	Final bool
}

// DialogAfter is how long a running turn's transcript stays quiet before
// the screen is read for a dialog mid-turn (A10): a permission prompt
// stops the transcript, and a turn that writes needs no screen read.
const DialogAfter = 2 * time.Second

// Observe reads what Decide needs of run r, each thing once: how the
// agent stands in its pane, then its transcript found (and recorded before
// anything else is read), the deliverable, the transcript and, where a
// decision turns on it, its screen. It also returns the run's prompt.
func Observe(ctx context.Context, r Run, s Sources) (Observation, string, error) {
	o := Observation{Now: s.Now}
	a := r.Agent
	running := r.Running()
	// How the agent stands is read first: once it has ended, what it
	// wrote (its transcript, its commits) is final, so the reads below
	// see all of it.
	panes := running && !a.Printed() && s.Panes != nil
	if panes {
		observePane(ctx, r, s.Panes, &o)
	}
	if running && a.Transcript == "" {
		if t := a.ProgramOf().FindTranscript(s.Vars, a.Started, s.Taken); t != "" {
			o.Found = t
			return o, "", nil // recorded first: the next step reads it
		}
	}
	if s.Deliverable != nil {
		var err error
		if o.Delivered, o.What, err = s.Deliverable(ctx); err != nil {
			return o, "", err
		}
	}
	if !running && (!s.Final || a == nil || a.Transcript == "" || a.Printed()) {
		return o, "", nil
	}
	prompt, err := os.ReadFile(a.PromptFile)
	if err != nil && !running {
		return o, "", nil // an ended run's prompt file may be gone: nothing more to read
	} else if err != nil {
		return o, "", fmt.Errorf("read the run's prompt: %w", err)
	}
	last := a.SentAt
	if a.ToldAt != nil && a.ToldAt.After(last) {
		last = *a.ToldAt
	}
	ev, err := ownEvents(a, panes) // the program's own word, before its screen
	if err != nil {
		return o, "", err
	}
	var newest time.Time
	if a.Transcript != "" {
		if newest, err = readTranscript(r, s, string(prompt), &o); err != nil {
			return o, "", err
		}
		if info, err := os.Stat(a.Transcript); err == nil && info.ModTime().After(last) {
			last = info.ModTime()
		}
	}
	o.Quiet = max(s.Now.Sub(last), 0)
	if s.Place != nil {
		o.PlaceGone = s.Place()
	}
	if panes && o.Up {
		observeScreen(ctx, r, s.Panes, ev, newest, &o)
	}
	observeHooks(ev, newest, &o)
	return o, string(prompt), nil
}

// observeHooks takes into o what the program's own hooks report: the
// permission it waits for (WaitsFor, over the transcript's, which
// readTranscript kept in o) and when its turn ended. The hooks' times are
// the wall clock's, as the transcript's are; the timers' clock may be a
// test's.
func observeHooks(ev Events, newest time.Time, o *Observation) {
	o.Permission = ev.WaitsFor(o.Permission, newest, o.Screen, time.Now())
	o.Stopped = ev.TurnEnded(newest)
}

// observeScreen reads run r's screen into o where a decision turns on it
// (watchScreen), or where the agent's own hooks say a permission may wait
// (A11): the composer back on screen answers it.
func observeScreen(ctx context.Context, r Run, panes agent.PaneHost, ev Events, newest time.Time, o *Observation) {
	if !watchScreen(r, *o) && ev.Pending(newest, nil, time.Time{}) == "" {
		return
	}
	if text, err := panes.Capture(ctx, r.Agent.Pane); err == nil {
		screen := agent.ReadScreen(r.Agent.Format, text)
		o.Screen = &screen
	}
}

// ownEvents reads what the agent's own hooks said (A11), for an
// agent flume runs in a pane: a permission they report waits until a hook
// or a newer transcript line answers it.
func ownEvents(a *Agent, panes bool) (Events, error) {
	if !panes {
		return Events{}, nil
	}
	ev, err := ReadEvents(a.EventsFile())
	if err != nil {
		return ev, fmt.Errorf("read the agent's events: %w", err)
	}
	return ev, nil
}

// observePane reads into o how run r's agent stands in its pane: up, or
// how it ended by itself and, for a run that never started, what its
// screen last showed.
func observePane(ctx context.Context, r Run, panes agent.PaneHost, o *Observation) {
	a := r.Agent
	exit, ended := agent.HowEnded(ctx, panes, a.Pane)
	o.Up = !ended
	// An end flume is making (stop, drop, tidy) is recorded by the
	// command making it, never as the agent's own.
	if ended && !launchfile.Ending(a.Session) {
		o.Exit = &exit
		if !exit.Closed && Starting(r.State) {
			o.EndScreen = agent.EndScreen(ctx, panes, a.Pane)
		}
	}
}

// readTranscript reads run r's transcript once into o: the prompt and the
// follow-ups it shows, the newest message's need or recreation request, how
// the last turn ended and, for an error, whether it is a usage limit. It
// returns the time the newest line carries.
func readTranscript(r Run, s Sources, prompt string, o *Observation) (newest time.Time, err error) {
	tr, err := agent.ReadTranscriptFile(r.Agent.Transcript, r.Agent.Format)
	if err != nil {
		return time.Time{}, err
	}
	o.Transcript, o.Confirmed, o.LastAssistant, o.Refused = true, tr.Received(prompt), tr.LastAssistant, tr.Refused
	o.Permission = tr.Permission
	o.Need, o.Recreate, o.NextRound, o.Turn, o.ErrorText = tr.Need(), tr.Recreate(), tr.NextRound(), tr.Turn, tr.ErrorText
	o.LengthRetried = r.LengthPrompted && tr.Received(LengthMessage)
	o.Reminded = r.Reminded && s.Reminder != "" && tr.Received(s.Reminder)
	o.Resumed = r.Resumed && tr.Received(ResumeMessage)
	if tr.Turn == agent.TurnError {
		o.Limited, o.Reset = agent.UsageLimit(tr.ErrorText, s.Now)
	}
	return tr.Newest, nil
}

// watchScreen reports a step whose decision turns on the screen: a run
// starting (A3) or blocked (a dialog answered by hand), and one whose turn
// runs but whose transcript has gone quiet, where a dialog may have
// stopped it (A10).
func watchScreen(r Run, o Observation) bool {
	switch {
	case Starting(r.State), r.State == StateBlocked:
		return true
	case o.Delivered:
		return false
	case r.State == StateWorking || r.State == StateStuck:
		return o.Transcript && (o.Turn == agent.TurnRunning || o.Turn == agent.TurnNone) && o.Quiet >= DialogAfter
	}
	return false
}
