package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/toollog"
)

// TellOptions are what tell sends, and to which place.
type TellOptions struct {
	stage.PlaceOptions
	Text string
}

// WaitOptions are the place wait follows and how long it may.
type WaitOptions struct {
	Place   string
	Timeout time.Duration
}

// ReadGated reads a place and its claim and refuses another live
// session's, and a place whose record does not live here.
func (op *Operator) ReadGated(ctx context.Context, id string, g stage.GateOptions) (*refs.Record, *record.Place, error) {
	env, store := op.r.Env, op.r.Store
	rec, p, err := record.ReadPlace(ctx, store, id)
	if err != nil {
		return nil, nil, err
	}
	if err := op.home.CheckHome(ctx, p); err != nil {
		return nil, nil, err
	}
	cs, err := store.ReadClaim(ctx, id, env.Host)
	if err != nil {
		return nil, nil, err
	}
	if err := cs.Gate(id, g.Session, g.TakeOver); err != nil {
		return nil, nil, err
	}
	return rec, p, nil
}

// currentAgent returns the current stage and its agent, refusing when no
// agent of this place is up in a pane.
func currentAgent(ctx context.Context, env *stage.Env, p *record.Place) (*record.StageRecord, *run.Agent, error) {
	st := &p.Stages[p.Current]
	a := st.Agent
	if a == nil || a.Ended {
		return st, nil, &stage.RefusedError{Place: p.ID, Reason: "no agent is running in the current stage " + st.Name}
	}
	if a.Pane == "print" {
		return st, nil, &stage.RefusedError{Place: p.ID, Reason: "its agent was started by the operator (print pane); flume cannot type into it"}
	}
	if !env.Engine.Up(ctx, a) {
		return st, nil, &stage.RefusedError{Place: p.ID, Reason: "its agent is not up (pane " + a.Pane + " has exited)"}
	}
	return st, a, nil
}

// Tell sends text to a place's agent as a prompt and confirms it in the
// transcript (A4). It is refused, with nothing typed, when the agent is
// not up, when it waits on a question (the transcript's unanswered
// question or a dialog on screen).
func (op *Operator) Tell(ctx context.Context, o TellOptions) error {
	env := op.r.Env
	id, text, g := o.Place, o.Text, o.Gate
	_, p, err := op.ReadGated(ctx, id, g)
	if err != nil {
		return err
	}
	_, a, err := currentAgent(ctx, env, p)
	if err != nil {
		return err
	}
	capture, err := env.Engine.HostOf(a).Capture(ctx, a.Pane)
	if err != nil {
		return err
	}
	screen := agent.ReadScreen(a.Format, capture)
	if err := refuseTell(id, a, &screen); err != nil {
		return err
	}
	// X3: typed only into the program's own composer at the foot of its
	// screen (idle, or a turn at work that queues it); an unknown screen
	// is never taken for one.
	if !screen.Input {
		return &stage.RefusedError{Place: id, Reason: "the screen is not the agent's composer: " + screen.Words}
	}
	if err := env.Engine.HostOf(a).Send(ctx, a.Pane, text); err != nil {
		return err
	}
	deadline := time.Now().Add(env.Engine.Window())
	for time.Now().Before(deadline) {
		if p2, err := Advance(ctx, op.r, id); err == nil {
			if a2 := p2.Stages[p.Current].Agent; a2 != nil && a2.Transcript != "" {
				if tr, err := agent.ReadTranscriptFile(a2.Transcript, a2.Format); err == nil && tr.Received(text) {
					// The tell was received; moving the record on is the
					// watcher's too, and a step that fails here is taken
					// again by the next.
					_, _ = Advance(ctx, op.r, id)
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s: the message was typed but did not show in the agent's transcript within %s", id, env.Engine.Window())
}

// refuseTell refuses a tell to agent a of place id, with nothing typed,
// while the agent waits on its own question (A4), on a permission its own
// transcript shows (Codex), or on one its own hooks reported and neither
// its transcript nor its screen (the composer back) shows answered (A11):
// a dialog, whatever it looks like, drawn yet or not.
func refuseTell(id string, a *run.Agent, screen *agent.Screen) error {
	var newest time.Time
	var asked string
	if a.Transcript != "" {
		tr, err := agent.ReadTranscriptFile(a.Transcript, a.Format)
		if err != nil {
			return err
		}
		if tr.Question != "" {
			return &stage.RefusedError{Place: id, Reason: fmt.Sprintf("the agent is waiting on its own question %q; answer it in its pane", tr.Question)}
		}
		newest, asked = tr.Newest, tr.Permission
	}
	if ev, err := run.ReadEvents(a.EventsFile()); err != nil {
		return err
	} else if words := ev.WaitsFor(asked, newest, screen, time.Now()); words != "" {
		return &stage.RefusedError{Place: id, Reason: fmt.Sprintf("the agent waits for a permission (%s); answer it in its pane: git flume attach %s", words, id)}
	}
	return nil
}

// Stop ends a place's agent and fails unless it really exited (A5, X5). An
// agent in the middle of a turn is ended only with force.
func (op *Operator) Stop(ctx context.Context, o stage.PlaceOptions) error {
	env, store := op.r.Env, op.r.Store
	id, force, g := o.Place, o.Force, o.Gate
	// The place's watcher may record the agent's end first, as it sees
	// the pane go: the record is then read again. The agent is ended (and
	// verified gone) once; a later pass only records that, unless the
	// record already says so.
	ended := false
	return refs.DefaultRetry.Retry(ctx, func(ctx context.Context) error {
		rec, p, err := op.ReadGated(ctx, id, g)
		if err != nil {
			return err
		}
		st := &p.Stages[p.Current]
		// A5: a stopped stage is blocked, not working, until retry.
		stopped := func() {
			EndStage(st, run.StateBlocked, "its agent was stopped; git flume retry starts the stage again", env.ClockNow())
			if st.State == run.StateBlocked {
				st.Block = run.BlockStopped
			}
		}
		switch a := st.Agent; {
		case !ended:
			if _, _, err := currentAgent(ctx, env, p); err != nil {
				return err
			}
			if !force && a.Transcript != "" {
				if tr, err := agent.ReadTranscriptFile(a.Transcript, a.Format); err == nil && tr.Turn == agent.TurnRunning {
					return &stage.RefusedError{Place: id, Reason: "its agent is working (its turn has not ended); pass --force to end it anyway"}
				}
			}
			if err := EndAgent(ctx, env, a); err != nil {
				return err
			}
			ended = true
			stopped()
		case a == nil || a.Ended:
			if st.State == run.StateBlocked && st.Block == run.BlockStopped {
				return nil
			}
			stopped() // the watcher recorded the end first
		default:
			a.Ended = true
			stopped()
		}
		_, err = record.SavePlace(ctx, store, rec, p, fmt.Sprintf("%s %s: agent stopped", st.Name, id))
		return err
	})
}

// Retry starts the current stage again with a fresh agent and its prompt
// (A5), and follows it as launch does. A running agent is ended first only
// with force.
func (op *Operator) Retry(ctx context.Context, o stage.PlaceOptions) (*record.Place, error) {
	return op.RestartStage(ctx, o, RestartRules{Verb: "retry", Check: func(p *record.Place) error { return nil }})
}

// GoOn runs a question's round again with a fresh agent (K4).
func (op *Operator) GoOn(ctx context.Context, o stage.PlaceOptions) (*record.Place, error) {
	return op.RestartStage(ctx, o, RestartRules{Verb: "go on", Check: func(p *record.Place) error {
		if p.PlaceKind != "question" {
			return &stage.RefusedError{Place: o.Place, Reason: "go-on runs a question's round again; this is a " + p.PlaceKind}
		}
		return nil
	}})
}

// RestartRules is what starting a stage again checks and carries.
type RestartRules struct {
	// Verb names the operator's verb in what is refused.
	Verb string
	// Check refuses a place this verb does not apply to, as read.
	Check func(*record.Place) error
	// Delivered lets a delivered stage start again (reopen).
	Delivered bool
	// Followup is told to the fresh agent after the stage's prompt.
	Followup string
	// Resume: the stage's last agent's own session goes on, told only
	// Followup, where its program can resume one.
	Resume bool
}

func (op *Operator) RestartStage(ctx context.Context, o stage.PlaceOptions, how RestartRules) (*record.Place, error) {
	env, repo, store := op.r.Env, op.r.Git, op.r.Store
	id, force, g := o.Place, o.Force, o.Gate
	// What happened since the last step is recorded first: a blocked
	// stage whose deliverable arrived is delivered, never started anew
	// over its own work. Nothing is started by that look (a pending stage
	// is this verb's to start, after its checks), and a place the engine
	// may not move is refused by the gate below.
	_, _ = Advance(ctx, op.r.With(func(e *stage.Env) { e.Engine.NoStart = true }), id) // a look first; the gate below reads the record as it is
	// The place's watcher moves the record too (most of all while the
	// agent it watches is being ended): a lost race is read again and
	// decided again, never reported as the caller's failure. Ending an
	// agent that is already gone does nothing, so a second pass is safe.
	err := refs.DefaultRetry.Retry(ctx, func(ctx context.Context) error {
		rec, p, err := op.ReadGated(ctx, id, g)
		if err != nil {
			return err
		}
		if err := how.Check(p); err != nil {
			return err
		}
		// A10: a restart starts only in the place's own worktree.
		if gone := placeGone(ctx, repo, p); gone != "" {
			return &stage.RefusedError{Place: id, Reason: gone + "; nothing is started anywhere else. Recover: " + recoverPlace(p)}
		}
		st := &p.Stages[p.Current]
		if a := st.Agent; a != nil && !a.Ended {
			if env.Engine.Up(ctx, a) && !force {
				return &stage.RefusedError{Place: id, Reason: "its agent is still running; stop it first or pass --force"}
			}
			if err := EndAgent(ctx, env, a); err != nil {
				return err
			}
		}
		if err := rearm(p, st, how); err != nil {
			return err
		}
		// W3: what the ended agent left uncommitted is kept before anyone
		// starts over it.
		if err := keepSnapshot(ctx, repo, p, st, "retry"); err != nil {
			return err
		}
		st.State, st.Starter = record.StagePending, env.Self()
		with := "with a fresh agent"
		if st.Resume != nil {
			with = "resuming its agent's session " + st.Resume.Session
		}
		_, err = record.SavePlace(ctx, store, rec, p, fmt.Sprintf("%s %s: %s %s", st.Name, id, how.Verb, with))
		return err
	})
	if err != nil {
		return nil, err
	}
	return Follow(ctx, op.r, id)
}

// rearm readies stage st of p to start again as how says: a delivered
// stage only where how lets one start over (a question's always), its
// followup set, its agent's session resumed where how asks and the
// program can.
func rearm(p *record.Place, st *record.StageRecord, how RestartRules) error {
	if st.State == run.StateDelivered || st.State == record.StateLanded {
		if p.PlaceKind != "question" && !how.Delivered {
			return &stage.RefusedError{Place: p.ID, Reason: "stage " + st.Name + " was delivered; nothing to " + how.Verb}
		}
		st.Report, st.ReportMissing, st.Landing, st.Ended = nil, false, nil, nil
	}
	st.Followup = cmp.Or(how.Followup, nextRoundNote(st))
	st.Resume = nil
	if a := st.Agent; how.Resume && a != nil && a.Transcript != "" && !a.Printed() {
		st.Resume = &record.ResumeFrom{Program: a.Program, Session: a.Session, Transcript: a.Transcript}
	}
	return nil
}

// nextRoundNote is what the next round of a question is told of the last
// one, which stopped short saying where it starts (K4); "" when it did not.
func nextRoundNote(st *record.StageRecord) string {
	if st.NextRound == "" {
		return ""
	}
	return "The last round stopped short. It said the next round starts here: " + st.NextRound
}

// Outcome is what Wait saw end.
type Outcome struct {
	Place string `json:"place"`
	Stage string `json:"stage"`
	State string `json:"state"`
	// Delivered is what ended the stage, with the next stage if one
	// started.
	Delivered string `json:"delivered,omitempty"`
	Next      string `json:"next,omitempty"`
	Need      string `json:"need,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Report is the agent's STAGE REPORT; ReportMissing flags an ended
	// stage without one (W2).
	Report        *record.Report `json:"report,omitempty"`
	ReportMissing bool           `json:"reportMissing,omitempty"`
	// Delegation is where a delegated place stands when the wait ends
	// (finished or blocked); "" for a top-level place.
	Delegation string `json:"delegation,omitempty"`
	// LastTools are a delegated place's last tool calls, for its
	// commissioner.
	LastTools []string `json:"lastTools,omitempty"`
	// Role is the role a delegated place's stage runs in: its question is
	// labelled with it.
	Role string `json:"role,omitempty"`
	// Worktree is a delegated place's uncommitted files and newest
	// commits, for its commissioner.
	Worktree *Glance `json:"worktree,omitempty"`
}

// ErrTimeout is a wait that ran out of time.
var ErrTimeout = errors.New("timed out")

// Wait advances a place until its current stage ends or needs someone:
// delivered, landed, waiting, stuck, blocked, never-started or cut. A
// delegated place is followed through its stages until it is finished or
// blocked, as its commissioner needs.
func Wait(ctx context.Context, r *stage.Repository, o WaitOptions) (*Outcome, error) {
	env, id, timeout := r.Env, o.Place, o.Timeout
	deadline := time.Now().Add(timeout)
	start := -1
	for {
		p, err := Advance(ctx, r, id)
		if err != nil {
			return nil, err
		}
		if p.Host != env.Host {
			// R7: another host's place is followed by its owner; here it
			// is only what the last sync brought, and never a child of
			// a place of ours.
			return nil, &stage.RefusedError{Place: id, Reason: fmt.Sprintf("a place of host %s: only its owner follows it; git flume status shows it as the last sync brought it", p.Host)}
		}
		if start < 0 || p.Parent != nil {
			start = p.Current
		}
		st := p.Stages[start]
		delegation := record.DelegationState(p)
		switch st.State {
		case run.StateDelivered, record.StateLanded, run.StateWaiting, run.StateStuck, run.StateBlocked, run.StateNeverStarted, run.StateCut:
			if delegation == record.DelegationWorking {
				break // a delegated place's next stage is about to start
			}
			o := &Outcome{Place: id, Stage: st.Name, State: st.State, Delivered: st.Delivered, Need: st.Need, Reason: st.Reason,
				Report: st.Report, ReportMissing: st.ReportMissing, Delegation: delegation}
			if p.Parent != nil {
				// its commissioner sees what it last did, and
				// the role it asks in.
				o.LastTools, o.Role, o.Worktree = toollog.LastTools(&st, toollog.ChildTools), st.Role, GlanceAt(ctx, env, r.Git, p)
			}
			if p.Current != start {
				o.Next = p.Stages[p.Current].Name
			}
			return o, nil
		}
		if time.Now().After(deadline) {
			return &Outcome{Place: id, Stage: st.Name, State: st.State}, fmt.Errorf("%s: stage %s still %s after %s: %w", id, st.Name, st.State, timeout, ErrTimeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Attach attaches a person's terminal to the pane of the place's current
// agent, to see it and answer it there (a dialog flume never types into,
// X3). Refused when no agent of the place runs, when it runs in the
// operator's own terminal, or when its pane host has no terminal to give.
func (op *Operator) Attach(ctx context.Context, o stage.PlaceOptions, term agent.Terminal) error {
	env := op.r.Env
	_, p, err := record.ReadPlace(ctx, op.r.Store, o.Place)
	if err != nil {
		return err
	}
	if err := op.home.CheckHome(ctx, p); err != nil {
		return err
	}
	_, a, err := currentAgent(ctx, env, p)
	if err != nil {
		return err
	}
	at, ok := env.Engine.HostOf(a).(agent.Attacher)
	if !ok {
		return &stage.RefusedError{Place: o.Place, Reason: fmt.Sprintf("its agent runs in %s pane %s: open it there", record.AgentPaneHost(a), a.Pane)}
	}
	return at.Attach(ctx, a.Pane, term)
}

// recoverPlace is what moves on a place whose worktree went away (A10):
// its branch keeps every commit, so drop it and let tidy remove what is
// left, or bring the worktree back on its branch and start the stage
// again.
func recoverPlace(p *record.Place) string {
	return fmt.Sprintf("its worktree is gone: git flume drop %s (its branch keeps its commits; tidy removes the rest), or git worktree add -f %s %s, then git flume retry --force %s",
		p.ID, p.Path, p.Branch, p.ID)
}

// Follow follows place id's stage that just started until its prompt is
// confirmed or it resolves otherwise (Confirm), then makes sure a watcher
// keeps its timers, even when following failed: the stage may still run.
func Follow(ctx context.Context, r *stage.Repository, id string) (*record.Place, error) {
	p, err := Confirm(ctx, r, id)
	known := p
	if err != nil {
		known = nil // it may have moved since: read it
	}
	ensureWatcher(ctx, r, id, known)
	return p, err
}

// ensureWatcher starts place id's watcher if it needs one: its record
// alone says so (a launch used to read every place's status here). p is
// the place as just read and decided, or nil to read it.
func ensureWatcher(ctx context.Context, r *stage.Repository, id string, p *record.Place) {
	env := r.Env
	if env.StartWatcher == nil {
		return
	}
	if p == nil {
		var err error
		if _, p, err = record.ReadPlace(ctx, r.Store, id); err != nil {
			return
		}
	}
	if NeedsWatcher(ctx, env, p) {
		env.StartWatcher(r.Dir, id)
	}
}
