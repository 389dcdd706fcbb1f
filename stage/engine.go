package stage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/git-flume/git-flume/agent"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
)

// Stage states (S1).
const (
	StateStarting     = "starting"
	StateUnknown      = "unknown"
	StateWorking      = "working"
	StateWaiting      = "waiting"
	StateStuck        = "stuck"
	StateDelivered    = "delivered"
	StateNeverStarted = "never-started"
	StateCut          = "cut"
	StateBlocked      = "blocked"
	StateLanded       = "landed"
	// StateParked is a stage whose provider refused more work until a
	// reset (issue 17): flume resumes it once, after the reset.
	StateParked = "parked"
)

// ResumeMessage is the one follow-up a parked stage's agent gets once its
// usage limit has reset.
const ResumeMessage = "Your usage limit has reset. Continue from where you stopped; commit what is done."

// What blocks a stage (StageRecord.Block).
const (
	BlockDialog   = "dialog"   // a screen that is not the agent's ready composer (X3)
	BlockError    = "error"    // a turn that ended with an error (A8)
	BlockLength   = "length"   // a reply cut for length again after the recovery prompt (A8)
	BlockReminded = "reminded" // a turn that ended again with neither deliverable nor need after the reminder (A8)
	BlockReady    = "ready"    // readying failed (L2)
	BlockRollback = "rollback" // rolled back: waits for retry (W5)
	BlockStopped  = "stopped"  // its agent was stopped (A5): waits for retry
	// BlockRecreated: its runs asked for a fresh session more often than
	// MaxRecreations allows (issue 17).
	BlockRecreated = "recreated"
)

// block marks st blocked by kind, with the reason status shows.
func block(st *StageRecord, kind, reason string) {
	st.State, st.Block, st.Reason = StateBlocked, kind, reason
}

// dialogReason is a blocked stage's reason for a screen that is not the
// agent's ready composer, with the screen's words.
func dialogReason(words string) string {
	return "the screen is not the agent's ready composer: " + words
}

// LengthMessage is the one recovery prompt after a reply cut for length
// (A8).
const LengthMessage = "Your last reply was cut off for length. Continue from where it stopped, in shorter steps; commit what is done."

// reminder is the one message after a turn that ended with neither the
// stage's deliverable nor a need (A8).
func reminder(st *StageRecord) string {
	return "Your turn ended, but this stage's deliverable is not in git yet (" + describeDeliverable(st.Deliverable) +
		"). Finish it and commit, or end your turn with a line starting with NEEDS: saying what you need."
}

// BudgetMessage is the one message a stage's agent gets at 75% of its
// budget (W1): land softly, never start anew.
const BudgetMessage = "You have used three quarters of this stage's time budget. Start no new unit of work: finish the one in hand, commit it, and close with your STAGE REPORT."

// EngineOptions tune how stages start and are watched.
type EngineOptions struct {
	// Pane is "tmux" (default), "print" (flume prints the command and
	// watches the transcript) or "none" (flume starts no agent).
	Pane string
	// Panes is the pane host of Pane, for agents that record none.
	Panes agent.PaneHost
	// Hosts makes the pane host an agent recorded ("tmux", "herdr"), so a
	// command run with another default still reaches it; nil uses Panes.
	Hosts func(name string) agent.PaneHost
	// Agent is the program used when a place names none.
	Agent string
	// ConfirmWindow is how long a sent prompt may take to show in the
	// transcript before it is checked and sent once more (A3).
	ConfirmWindow time.Duration
	// StuckAfter is how long a stage may be quiet before it is reported
	// stuck (A7).
	StuckAfter time.Duration
	// Print receives the command an operator runs with the print pane.
	Print io.Writer
	// NoStart records what happened but starts no agent: for a run from a
	// hook, which runs inside an agent's environment, not the launching
	// caller's (A1). A watcher or the next command starts the stage.
	NoStart bool
	// Budget, when set, is every stage's budget, unclamped: a test and
	// experiment knob ($FLUME_BUDGET). Configuration sets it otherwise (W1).
	Budget time.Duration
	// Guard is the command an agent's PreToolUse hook runs to ask flume
	// (A9), such as "/usr/local/bin/git-flume guard"; "" installs none.
	Guard string
	// ReportGrace is how long an agent whose deliverable is in git may
	// still take to close its turn with its STAGE REPORT (W2).
	ReportGrace time.Duration
	// RemindAfter is how long a turn that ended with neither deliverable
	// nor need stays quiet before the one reminder (A8).
	RemindAfter time.Duration
	// NoGrace ends a stage whose deliverable is in git at once, with no
	// report grace: for tidy, which ends the agent anyway.
	NoGrace bool
}

func (o EngineOptions) reportGrace() time.Duration {
	if o.ReportGrace > 0 {
		return o.ReportGrace
	}
	return 60 * time.Second
}

func (o EngineOptions) remindAfter() time.Duration {
	if o.RemindAfter > 0 {
		return o.RemindAfter
	}
	return 2 * time.Minute
}

func (o EngineOptions) window() time.Duration {
	if o.ConfirmWindow > 0 {
		return o.ConfirmWindow
	}
	return 60 * time.Second
}

func (o EngineOptions) stuckAfter() time.Duration {
	if o.StuckAfter > 0 {
		return o.StuckAfter
	}
	return 30 * time.Minute
}

// active reports a state whose agent is expected to be at work.
func active(state string) bool {
	switch state {
	case StateStarting, StateUnknown, StateWorking, StateWaiting, StateStuck, StateParked:
		return true
	}
	return false
}

// observed reports a stage the engine watches: an active one, or one
// blocked after its run started, until the evidence that blocked it is gone
// or its deliverable shows up (a dialog answered by hand, then a commit).
// A stage rolled back waits for retry (W5); one whose place was not ready
// never started.
func observed(st *StageRecord) bool {
	if active(st.State) {
		return true
	}
	return st.State == StateBlocked && st.Base != "" && st.Started != nil &&
		st.Block != BlockRollback && st.Block != BlockReady
}

// Confirm advances a place whose stage just started until its prompt is
// confirmed or the stage resolves otherwise (working, blocked,
// never-started, …): at most a window and a half after the second send.
// Slow is not failed: a stage still starting then is left to the watcher.
func Confirm(ctx context.Context, env *Env, repoDir, id string) (*Place, error) {
	for {
		p, err := Advance(ctx, env, repoDir, id)
		if err != nil {
			return p, err
		}
		st := p.Stages[p.Current]
		if (st.State != StateStarting && st.State != StateUnknown) || st.Agent == nil || st.Agent.Pane == "print" {
			return p, nil
		}
		// Each send gets its window and a half: a resend restarts it.
		if env.clock().Sub(st.Agent.SentAt) > env.Engine.window()*3/2 && st.Agent.Sends >= 2 {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Advance runs the place's stage engine until nothing more moves: start a
// pending stage, confirm its prompt, notice its deliverable, its need, its
// silence. Every move is a CAS write of the place record made from what was
// just read, so any process may run it, and one killed midway loses nothing:
// the next run reads where it stopped.
func Advance(ctx context.Context, env *Env, repoDir, id string) (*Place, error) {
	repo, store, err := env.open(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	for n := range 16 {
		rec, p, err := readPlace(ctx, store, id)
		if err != nil {
			return nil, err
		}
		if n == 0 && p.Host == env.Host {
			if err := checkHome(ctx, env, repo, p); err != nil {
				return p, err
			}
			// W4: the live log gets the tool calls the transcripts show
			// (startStage catches up again before it replaces an agent).
			// The record, not the log, is the truth: a log that cannot
			// be written stops nothing.
			logTools(ctx, repo.CommonDir, p)
		}
		moved, err := step(ctx, env, repo, store, rec, p)
		var conflict *refs.ConflictError
		if errors.As(err, &conflict) {
			continue // someone else moved it: read again
		}
		if err != nil || !moved {
			return p, err
		}
	}
	_, p, err := readPlace(ctx, store, id)
	return p, err
}

// step makes at most one move and reports whether it did: a pending stage
// is started; an active one is observed (observe), decided (decide, pure)
// and moved (apply). A follow-up that cannot be typed now is decided once
// more without typing, as if it had not been proposed.
func step(ctx context.Context, env *Env, repo *git.Repo, store *refs.Store, rec *refs.Record, p *Place) (bool, error) {
	if p.Phase != PhaseMade || p.Host != env.Host || p.Current >= len(p.Stages) {
		return false, nil
	}
	st := &p.Stages[p.Current]
	if st.State == StagePending {
		if env.Engine.Pane == "none" || env.Engine.NoStart {
			return false, nil
		}
		i := p.Current
		moved, err := startStage(ctx, env, repo, store, rec, p)
		if moved && p.Stages[i].State == StateBlocked {
			notify(ctx, env, repo, p, i) // not ready (L2)
		}
		return moved, err
	}
	if !observed(st) {
		return false, nil
	}
	seen, prompt, err := observe(ctx, env, repo, p, st)
	if err != nil {
		return false, err
	}
	i, before := p.Current, st.State
	for {
		mv := decide(p, seen, env.Engine.timers())
		moved, untyped, err := apply(ctx, env, repo, store, rec, p, st, mv, prompt, seen.Transcript)
		if !untyped || seen.Busy {
			if moved && st.State != before {
				notify(ctx, env, repo, p, i) // this process made the move: it tells, once
			}
			return moved, err
		}
		seen.Busy = true
	}
}

// writeStep records one move of stage st and tells the pane host (herdr's
// sidebar) about it.
func writeStep(ctx context.Context, env *Env, store *refs.Store, rec *refs.Record, p *Place, st *StageRecord, msg string) (bool, error) {
	_, err := savePlace(ctx, store, rec, p, fmt.Sprintf("%s %s: %s", st.Name, p.ID, msg))
	if err == nil {
		report(ctx, env, p, st)
	}
	return err == nil, err
}

// observe reads what decide needs of active stage st: the transcript is the
// proof of everything after (found first, then read once, after the
// deliverable at one branch head, K6), and the pane and its screen only
// where a decision turns on them. It also returns the stage's prompt.
func observe(ctx context.Context, env *Env, repo *git.Repo, p *Place, st *StageRecord) (stepSeen, string, error) {
	seen := stepSeen{Now: env.clock()}
	a := st.Agent
	running := a != nil && !a.Ended
	var tr *agent.Transcript
	var prompt []byte
	if running {
		if a.Transcript == "" {
			vars := agent.Vars{SessionID: a.Session, Place: p.Path, Home: agent.HomeOf(env.CallerEnv)}
			if t := programOf(a).FindTranscript(vars, a.Started, takenTranscripts(p)); t != "" {
				seen.Found = t
				return seen, "", nil // recorded first: the next step reads it
			}
		}
	}
	// The deliverable is read before the transcript: an agent writes the
	// prompt it received to its transcript before it acts on it, so a
	// transcript read after a commit was seen holds that prompt. Read the
	// other way round, a fast agent could commit between the two reads and
	// its stage be delivered without its prompt ever confirmed (A3).
	head, err := repo.ResolveRef(ctx, p.branchRef())
	if err != nil && !errors.Is(err, git.ErrNotExist) {
		return seen, "", err
	}
	seen.Head = head
	if seen.Done, seen.What, seen.Tasks, err = deliverable(ctx, repo, p, st, head); err != nil {
		return seen, "", err
	}
	if running {
		if prompt, err = os.ReadFile(a.PromptFile); err != nil {
			return seen, "", fmt.Errorf("read the stage's prompt: %w", err)
		}
		if a.Transcript != "" {
			if tr, err = agent.ReadTranscriptFile(a.Transcript, a.Format); err != nil {
				return seen, "", err
			}
			seen.Transcript, seen.Confirmed, seen.LastAssistant = true, tr.Received(string(prompt)), tr.LastAssistant
			seen.Working = workingSeen{Need: tr.Need(), Recreate: tr.Recreate(), Turn: tr.Turn, ErrorText: tr.ErrorText,
				LengthRetried: st.LengthPrompted && tr.Received(LengthMessage), Reminded: st.Reminded && tr.Received(reminder(st)),
				Resumed: st.Resumed && tr.Received(ResumeMessage), Quiet: seen.Now.Sub(modTime(a.Transcript)), Now: seen.Now}
			if tr.Turn == agent.TurnError {
				seen.Working.Limited, seen.Working.Reset = agent.UsageLimit(tr.ErrorText, seen.Now)
			}
		}
	}
	watchScreen := starting(st.State) || st.State == StateBlocked
	if running && (watchScreen || seen.Done && seen.Working.Turn == agent.TurnRunning) {
		seen.Up = env.Engine.up(ctx, a)
	}
	if seen.Up && watchScreen {
		if text, err := env.Engine.panes(a).Capture(ctx, a.Pane); err == nil {
			screen := agent.ReadScreen(a.Format, text)
			seen.Screen = &screen
		}
	}
	return seen, string(prompt), nil
}

// apply makes move mv of stage st: a follow-up typed only into a ready
// composer (X3) and recorded only once typed (a dialog blocks the stage
// with its words); an agent ended and verified gone before its end is
// recorded (K1, X5); a prompt resent (A3); or a plain record write.
// untyped reports a follow-up that could not be typed now.
func apply(ctx context.Context, env *Env, repo *git.Repo, store *refs.Store, rec *refs.Record, p *Place, st *StageRecord, mv move, prompt string, hasTranscript bool) (moved, untyped bool, err error) {
	write := func(msg string) (bool, error) { return writeStep(ctx, env, store, rec, p, st, msg) }
	switch {
	case mv.Resend:
		moved, err = confirmOrResend(ctx, env, st, st.Agent, prompt, hasTranscript, write)
		return moved, false, err
	case mv.Tell != "":
		ok, blocked, err := followUp(ctx, env, st.Agent, mv.Tell)
		switch {
		case err != nil:
			return false, false, err
		case blocked != "":
			block(st, BlockDialog, dialogReason(blocked))
			moved, err = write("blocked: " + blocked)
			return moved, false, err
		case !ok:
			return false, true, nil
		}
		*mv.Sent = true
		if mv.State != "" {
			st.State, st.Reason = mv.State, ""
		}
		moved, err = write(mv.Write)
		return moved, false, err
	case mv.End != "":
		// A stage ends only with its agent gone, and the next one never
		// starts over it (K1).
		if err := endAgent(ctx, env, mv.Stage.Agent); err != nil {
			return false, false, err
		}
		if mv.End == snapshotEnd {
			env.fault("deliver:agent-ended")
		}
		if err := keepSnapshot(ctx, repo, p, mv.Stage, mv.End); err != nil {
			return false, false, err
		}
		moved, err = write(mv.Write)
		if moved && mv.End == snapshotEnd {
			env.fault("deliver:recorded")
		}
		return moved, false, err
	case mv.Write != "":
		moved, err = write(mv.Write)
		return moved, false, err
	}
	return false, false, nil
}

// taskLine is compiled when first used: package inits run before every
// command, and most never read a task list (issue 14).
var taskLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*(?:[-*+]|\d+\.)\s*\[([^\]]*)\]`) })
