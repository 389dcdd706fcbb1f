package stage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
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
)

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
	case StateStarting, StateUnknown, StateWorking, StateWaiting, StateStuck:
		return true
	}
	return false
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
		if time.Since(st.Agent.SentAt) > env.Engine.window()*3/2 && st.Agent.Sends >= 2 {
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

// step makes at most one move and reports whether it did.
func step(ctx context.Context, env *Env, repo *git.Repo, store *refs.Store, rec *refs.Record, p *Place) (bool, error) {
	if p.Phase != PhaseMade || p.Host != env.Host || p.Current >= len(p.Stages) {
		return false, nil
	}
	st := &p.Stages[p.Current]
	write := func(msg string) (bool, error) {
		_, err := savePlace(ctx, store, rec, p, fmt.Sprintf("%s %s: %s", st.Name, p.ID, msg))
		if err == nil {
			report(ctx, env, p, st)
		}
		return err == nil, err
	}
	if st.State == StagePending {
		if env.Engine.Pane == "none" || env.Engine.NoStart {
			return false, nil
		}
		return startStage(ctx, env, repo, store, rec, p)
	}
	if !active(st.State) {
		return false, nil
	}
	now := time.Now().UTC() // timers run on the real clock, never FLUME_NOW

	// The transcript is the proof of everything after: find it, then read
	// it once for this step.
	a := st.Agent
	// tell types one of flume's own follow-ups (X3) and, only once typed,
	// marks it sent and records msg (X5). A dialog on screen blocks the
	// stage with its words. typed is false when nothing was typed and
	// nothing moved: the agent is busy or gone, and a later step tries.
	tell := func(text string, sent *bool, msg string) (typed, moved bool, err error) {
		ok, blocked, err := followUp(ctx, env, a, text)
		switch {
		case err != nil:
			return false, false, err
		case blocked != "":
			st.State, st.Reason = StateBlocked, "the screen is not the agent's ready composer: "+blocked
			moved, err = write("blocked: " + blocked)
			return true, moved, err
		case !ok:
			return false, false, nil
		}
		*sent = true
		moved, err = write(msg)
		return true, moved, err
	}
	var tr *agent.Transcript
	var prompt []byte
	if a != nil && !a.Ended {
		if a.Transcript == "" {
			vars := agent.Vars{SessionID: a.Session, Place: p.Path, Home: agent.HomeOf(env.CallerEnv)}
			if t := programOf(a).FindTranscript(vars, a.Started, takenTranscripts(p)); t != "" {
				a.Transcript = t
				return write("transcript " + t)
			}
		}
		var err error
		if prompt, err = os.ReadFile(a.PromptFile); err != nil {
			return false, fmt.Errorf("read the stage's prompt: %w", err)
		}
		if a.Transcript != "" {
			if tr, err = agent.ReadTranscriptFile(a.Transcript, a.Format); err != nil {
				return false, err
			}
		}
		// A3: the prompt's arrival is recorded before anything it led to,
		// so the history reads "confirmed" before "delivered".
		if (st.State == StateStarting || st.State == StateUnknown) && tr != nil && tr.Received(string(prompt)) {
			st.State, st.Reason = StateWorking, ""
			return write("prompt confirmed in the transcript")
		}
	}

	// K6: the deliverable is read at one commit, the branch head read once.
	head, err := repo.ResolveRef(ctx, p.branchRef())
	if err != nil && !errors.Is(err, git.ErrNotExist) {
		return false, err
	}
	done, what, tasks, err := deliverable(ctx, repo, p, st, head)
	if err != nil {
		return false, err
	}
	if done {
		// W2: an agent whose turn still runs gets a grace to close it with
		// its STAGE REPORT before it is ended.
		if a != nil && !a.Ended && tr != nil && tr.Turn == agent.TurnRunning && env.Engine.up(ctx, a) {
			if st.Landing == nil {
				st.Landing = &now
				return write("deliverable in git; the agent closes its turn")
			}
			if now.Sub(*st.Landing) < env.Engine.reportGrace() {
				return false, nil
			}
		}
		if tr != nil {
			st.Report = ParseReport(tr.LastAssistant)
		}
		st.ReportMissing = st.Report == nil
		// End the agent first: a stage is delivered only with its agent
		// gone, and the next one never starts over it (K1).
		if err := endAgent(ctx, env, st.Agent); err != nil {
			return false, err
		}
		env.fault("deliver:agent-ended")
		if err := keepSnapshot(ctx, repo, p, st, "end"); err != nil {
			return false, err
		}
		st.State, st.Delivered, st.At, st.Ended, st.Tasks, st.Need = StateDelivered, what, head, &now, tasks, ""
		if st.Deliverable == DeliverLanded {
			st.State = StateLanded
		}
		msg := "delivered: " + what
		if p.Current+1 < len(p.Stages) {
			p.Current++
			msg += "; next stage " + p.Stages[p.Current].Name
		}
		moved, err := write(msg)
		if moved {
			env.fault("deliver:recorded")
		}
		return moved, err
	}
	if tasks != nil && (st.Tasks == nil || *st.Tasks != *tasks) {
		st.Tasks = tasks
		return write(fmt.Sprintf("tasks %d/%d", tasks.Done, tasks.Total))
	}

	if a == nil || a.Ended {
		return false, nil
	}

	// W1: the stage's budget, on the real clock from its start. The
	// deliverable above wins over a budget used up at the same reading.
	if budget := time.Duration(st.BudgetMs) * time.Millisecond; budget > 0 && st.Started != nil {
		used := now.Sub(*st.Started)
		switch {
		case used >= budget:
			if err := endAgent(ctx, env, a); err != nil {
				return false, err
			}
			if err := keepSnapshot(ctx, repo, p, st, "cut"); err != nil {
				return false, err
			}
			if tr != nil {
				st.Report = ParseReport(tr.LastAssistant)
			}
			st.ReportMissing = st.Report == nil
			st.State, st.Reason, st.Ended = StateCut, fmt.Sprintf("its budget of %s was used up", budget), &now
			return write("cut: " + st.Reason)
		case used >= budget*3/4 && !st.Told && st.State != StateStarting && st.State != StateUnknown:
			if typed, moved, err := tell(BudgetMessage, &st.Told, "three quarters of the budget used: told the agent to finish"); typed || err != nil {
				return moved, err
			}
		}
	}

	switch st.State {
	case StateStarting, StateUnknown:
		if now.Sub(a.SentAt) < env.Engine.window() {
			// Slow is not failed, but a dialog is known at once (X3).
			if env.Engine.up(ctx, a) {
				if text, err := env.Engine.panes(a).Capture(ctx, a.Pane); err == nil {
					if screen := agent.ReadScreen(a.Format, text); screen.Dialog {
						st.State, st.Reason = StateBlocked, "the screen is not the agent's ready composer: "+screen.Words
						return write("blocked: " + screen.Words)
					}
				}
			}
			return false, nil
		}
		if a.Pane == "print" {
			// The operator starts it: flume only watches (A3).
			if tr == nil && st.State != StateUnknown {
				st.State = StateUnknown
				return write("no transcript yet")
			}
			return false, nil
		}
		return confirmOrResend(ctx, env, st, a, string(prompt), tr, write)
	case StateWorking, StateStuck, StateWaiting:
		if tr == nil {
			return false, nil
		}
		seen := workingSeen{Need: tr.Need(), Turn: tr.Turn, ErrorText: tr.ErrorText,
			LengthRetried: st.LengthPrompted && tr.Received(LengthMessage), Quiet: now.Sub(modTime(a.Transcript))}
		switch mv := decideWorking(st, seen, env.Engine.remindAfter(), env.Engine.stuckAfter()); {
		case mv.Tell != "":
			_, moved, err := tell(mv.Tell, mv.Sent, mv.Write)
			return moved, err
		case mv.Write != "":
			return write(mv.Write)
		}
	}
	return false, nil
}

var taskLine = regexp.MustCompile(`^\s*(?:[-*+]|\d+\.)\s*\[([^\]]*)\]`)
