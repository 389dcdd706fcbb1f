// Decisions of the engine that need no I/O: given what a step observed,
// what moves. The step observes (transcript, screen, git), calls these, and
// applies what they say (a record write, one follow-up typed). They are
// table-tested without tmux or a clock (decide_test.go).

package stage

import (
	"fmt"
	"strings"
	"time"

	"github.com/git-flume/git-flume/agent"
)

// workingSeen is what a step observed of a stage whose agent works,
// waits or is stuck: its transcript, read once.
type workingSeen struct {
	Need string // the open NEEDS: of the newest message, "" when none
	// Recreate is the resume message of a newest message that asks for a
	// fresh session (RECREATE:), "" when none.
	Recreate string
	Turn     string // how the last turn ended (agent.Turn…)
	// ErrorText is the error a turn ended with.
	ErrorText string
	// LengthRetried: the length recovery prompt shows in the transcript.
	LengthRetried bool
	// Reminded: the reminder shows in the transcript.
	Reminded bool
	// Resumed: the one follow-up after a usage limit's reset shows in the
	// transcript.
	Resumed bool
	// Limited: the turn's error is a usage limit, naming Reset (zero when
	// it names none that reads).
	Limited bool
	Reset   time.Time
	// Now is the timers' clock.
	Now   time.Time
	Quiet time.Duration // since the transcript last changed
}

// move is what the engine does next: nothing (all empty), a record write
// with message Write, Tell typed first (only into a ready composer, X3)
// and, once typed, *Sent set and Write recorded; End: Stage's agent ended
// and verified gone (X5), its work tree kept in a snapshot named End
// (W3), then Write recorded; Resend: the prompt checked on screen and sent
// once more, or the stage resolved (A3).
type move struct {
	Write  string
	Tell   string
	Sent   *bool
	End    string
	Stage  *StageRecord
	Resend bool
	// State is the stage's state once Tell is typed.
	State string
}

// Snapshot names of the moves that end an agent.
const (
	snapshotEnd = "end"
	snapshotCut = "cut"
)

// decideWorking decides a working, waiting or stuck stage (A6, A7, A8): a
// need waits, an answered need works again, a turn that errs blocks, a
// reply cut for length gets the one recovery prompt (and blocks when cut
// again after it), a turn that ended with neither the deliverable nor a
// need gets the one reminder, a quiet transcript is stuck, and one that
// moves again is active. It changes st's state fields as it decides.
func decideWorking(st *StageRecord, seen workingSeen, remindAfter, stuckAfter time.Duration) move {
	if seen.Need != "" {
		if st.State != StateWaiting || st.Need != seen.Need {
			st.State, st.Need = StateWaiting, seen.Need
			return move{Write: "waiting: " + seen.Need}
		}
		return move{}
	}
	if st.State == StateWaiting {
		// The newest message no longer stops short: answered.
		st.State, st.Need = StateWorking, ""
		return move{Write: "need answered"}
	}
	if seen.Recreate != "" {
		return decideRecreate(st, seen.Recreate)
	}
	// A8: checkpoint recovery, one follow-up of each kind at most.
	switch seen.Turn {
	case agent.TurnError:
		return decideError(st, seen)
	case agent.TurnLength:
		if !st.LengthPrompted {
			return move{Tell: LengthMessage, Sent: &st.LengthPrompted, Write: "reply cut for length: sent the one recovery prompt"}
		}
		if seen.LengthRetried {
			block(st, BlockLength, "its reply was cut for length again after the recovery prompt")
			return move{Write: "blocked: " + st.Reason}
		}
	case agent.TurnDone:
		switch {
		case !st.Reminded && seen.Quiet >= remindAfter:
			return move{Tell: reminder(st), Sent: &st.Reminded, Write: "turn ended with neither the deliverable nor NEEDS:; sent the one reminder"}
		case st.Reminded && seen.Reminded && seen.Quiet >= remindAfter:
			block(st, BlockReminded, "its turn ended again with neither the deliverable nor NEEDS: after the one reminder")
			return move{Write: "blocked: " + st.Reason}
		}
	}
	switch {
	case st.State == StateWorking && seen.Quiet > stuckAfter:
		st.State = StateStuck
		return move{Write: fmt.Sprintf("stuck: quiet for %s with no deliverable and no need", seen.Quiet.Round(time.Second))}
	case st.State == StateStuck && seen.Quiet <= stuckAfter:
		st.State = StateWorking
		return move{Write: "active again"}
	}
	return move{}
}

// MaxRecreations is how many times a stage's runs may ask for a fresh
// session before the stage blocks: recreation is a way on, never a loop.
const MaxRecreations = 3

// decideRecreate decides a turn that ended asking for a fresh session
// (RECREATE:, issue 17): the agent is ended and verified gone, and the
// stage starts again with a fresh one told the resume message; past
// MaxRecreations the stage blocks with the request as its reason.
func decideRecreate(st *StageRecord, resume string) move {
	if st.Recreated >= MaxRecreations {
		block(st, BlockRecreated, fmt.Sprintf("its runs asked for a fresh session %d times; the last asked: %s", st.Recreated+1, resume))
		return move{Write: "blocked: " + st.Reason}
	}
	st.Recreated++
	st.State, st.Followup = StagePending, RecreatedNote+resume
	return move{End: snapshotEnd, Stage: st, Write: "the agent asked for a fresh session: ended; a fresh one starts with its resume message"}
}

// RecreatedNote begins what a run started for a recreated session is
// told after its prompt.
const RecreatedNote = "This is a fresh session: the one before it asked for it and left you this message: "

// stepSeen is what one engine step observed of an active stage, each
// thing read once: its agent's transcript, the deliverable at one branch
// head, and the pane and screen where they matter. decide reads nothing
// else.
type stepSeen struct {
	// Now is the timers' clock (Env.Clock) at the step.
	Now time.Time
	// Found is a transcript just found for an agent that had none.
	Found string
	// Transcript: the agent's transcript was read; Confirmed, Working and
	// LastAssistant come from it.
	Transcript bool
	// Confirmed: the stage's prompt shows in the transcript (A3).
	Confirmed     bool
	Working       workingSeen
	LastAssistant string
	// Head is the branch head the deliverable was read at (K6); Done,
	// What and Tasks are what it holds.
	Head  string
	Done  bool
	What  string
	Tasks *TaskCount
	// Up: the agent runs in its pane. Read while the stage starts, and
	// when the deliverable is in git while the agent's turn runs.
	Up bool
	// Screen is the pane's screen while the stage starts and its agent is
	// up; nil otherwise.
	Screen *agent.Screen
	// Busy: a follow-up could not be typed at this step (the composer was
	// busy, or the agent gone). decide then proposes no typing.
	Busy bool
}

// timers are the engine's windows (EngineOptions), as decide needs them.
type timers struct {
	Window, Grace, Remind, Stuck time.Duration
}

func (o EngineOptions) timers() timers {
	t := timers{Window: o.window(), Grace: o.reportGrace(), Remind: o.remindAfter(), Stuck: o.stuckAfter()}
	if o.NoGrace {
		t.Grace = 0
	}
	return t
}

// starting reports a stage whose prompt is not confirmed yet.
func starting(state string) bool { return state == StateStarting || state == StateUnknown }

// decide is the engine's one decision for an active stage (S1): from what
// the step observed, the move it makes next. In order: a transcript found,
// the prompt confirmed (A3), the deliverable (K6, W2), the task count, the
// budget (W1), then the stage's state: starting (A3, X3) or at work (A6,
// A7, A8). It changes p's fields as it decides; apply makes the move.
func decide(p *Place, seen stepSeen, t timers) move {
	st := &p.Stages[p.Current]
	a := st.Agent
	running := a != nil && !a.Ended
	if running && seen.Found != "" {
		a.Transcript = seen.Found
		return move{Write: "transcript " + seen.Found}
	}
	// A3: the prompt's arrival is recorded before anything it led to, so
	// the history reads "confirmed" before "delivered".
	if running && starting(st.State) && seen.Confirmed {
		st.State, st.Reason = StateWorking, ""
		return move{Write: "prompt confirmed in the transcript"}
	}
	// A dialog answered by hand: the screen is no longer a dialog and the
	// prompt shows in the transcript.
	if running && blockedBy(st) == BlockDialog && seen.Confirmed && seen.Screen != nil && !seen.Screen.Dialog {
		st.State, st.Block, st.Reason = StateWorking, "", ""
		return move{Write: "the dialog was answered: prompt confirmed in the transcript"}
	}
	if seen.Done {
		return decideDelivered(p, seen, t)
	}
	if seen.Tasks != nil && (st.Tasks == nil || *st.Tasks != *seen.Tasks) {
		st.Tasks = seen.Tasks
		return move{Write: fmt.Sprintf("tasks %d/%d", seen.Tasks.Done, seen.Tasks.Total)}
	}
	if !running {
		return move{}
	}
	if mv, ok := decideBudget(st, seen); ok {
		return mv
	}
	switch {
	case st.State == StateBlocked:
		return decideBlocked(st, seen)
	case st.State == StateParked:
		return decideParked(st, seen)
	case starting(st.State):
		return decideStarting(st, seen, t)
	case st.State == StateWorking || st.State == StateStuck || st.State == StateWaiting:
		if !seen.Transcript {
			return move{}
		}
		stuck := t.Stuck
		if st.StuckAfterMs > 0 {
			stuck = time.Duration(st.StuckAfterMs) * time.Millisecond
		}
		mv := decideWorking(st, seen.Working, t.Remind, stuck)
		if mv.Tell != "" && seen.Busy {
			return move{} // a later step types it
		}
		return mv
	}
	return move{}
}

// decideDelivered decides a stage whose deliverable is in git (K6): an
// agent still in its turn gets a grace to close it with its STAGE REPORT
// (W2); then the agent is ended (K1, X5), the report read, and the next
// stage made current.
func decideDelivered(p *Place, seen stepSeen, t timers) move {
	st := &p.Stages[p.Current]
	if a := st.Agent; a != nil && !a.Ended && seen.Transcript && seen.Working.Turn == agent.TurnRunning && seen.Up && t.Grace > 0 {
		if st.Landing == nil {
			st.Landing = &seen.Now
			return move{Write: "deliverable in git; the agent closes its turn"}
		}
		if seen.Now.Sub(*st.Landing) < t.Grace {
			return move{}
		}
	}
	if seen.Transcript {
		st.Report = ParseReport(seen.LastAssistant)
	}
	st.ReportMissing = st.Report == nil
	st.State, st.Delivered, st.At, st.Ended, st.Tasks, st.Need = StateDelivered, seen.What, seen.Head, &seen.Now, seen.Tasks, ""
	if st.Deliverable == DeliverLanded {
		st.State = StateLanded
	}
	msg := "delivered: " + seen.What
	if p.Current+1 < len(p.Stages) {
		p.Current++
		msg += "; next stage " + p.Stages[p.Current].Name
	}
	return move{End: snapshotEnd, Stage: st, Write: msg}
}

// decideBudget decides a stage's budget (W1), on the timers' clock from
// its start: used up, the agent is ended and the stage cut; at three
// quarters, the agent is told once to land softly. ok is false when the
// budget decides nothing.
func decideBudget(st *StageRecord, seen stepSeen) (mv move, ok bool) {
	budget := time.Duration(st.BudgetMs) * time.Millisecond
	if budget <= 0 || st.Started == nil || st.State == StateParked {
		return move{}, false
	}
	switch used := seen.Now.Sub(*st.Started) - time.Duration(st.ParkedMs)*time.Millisecond; {
	case used >= budget:
		if seen.Transcript {
			st.Report = ParseReport(seen.LastAssistant)
		}
		st.ReportMissing = st.Report == nil
		st.State, st.Reason, st.Ended = StateCut, fmt.Sprintf("its budget of %s was used up", budget), &seen.Now
		return move{End: snapshotCut, Stage: st, Write: "cut: " + st.Reason}, true
	case used >= budget*3/4 && !st.Told && !starting(st.State) && st.State != StateBlocked && !seen.Busy:
		return move{Tell: BudgetMessage, Sent: &st.Told, Write: "three quarters of the budget used: told the agent to finish"}, true
	}
	return move{}, false
}

// decideStarting decides a stage whose prompt is not confirmed yet (A3,
// X3): within its window slow is not failed, but a dialog on screen is
// known at once; past it, an operator's agent (print) with no transcript
// is unknown and watched, and any other gets its prompt checked and sent
// once more.
func decideStarting(st *StageRecord, seen stepSeen, t timers) move {
	a := st.Agent
	if seen.Now.Sub(a.SentAt) < t.Window {
		if seen.Screen != nil && seen.Screen.Dialog {
			block(st, BlockDialog, dialogReason(seen.Screen.Words))
			return move{Write: "blocked: " + seen.Screen.Words}
		}
		return move{}
	}
	if a.Pane == "print" {
		// The operator starts it: flume only watches (A3).
		if !seen.Transcript && st.State != StateUnknown {
			st.State = StateUnknown
			return move{Write: "no transcript yet"}
		}
		return move{}
	}
	return move{Resend: true}
}

// blockedBy is what blocked st, "" when it is not blocked.
func blockedBy(st *StageRecord) string {
	if st.State != StateBlocked {
		return ""
	}
	if st.Block == "" && strings.HasPrefix(st.Reason, dialogReason("")) {
		return BlockDialog // a record made before blocks were kept
	}
	return st.Block
}

// decideBlocked decides a blocked stage whose agent still runs, once its
// dialog (decide) and its deliverable, judged from the stage's own base,
// were decided: after an error, a length cut or a failed reminder, a turn
// running again (someone answered in the pane) works again.
func decideBlocked(st *StageRecord, seen stepSeen) move {
	switch blockedBy(st) {
	case BlockError, BlockLength, BlockReminded:
		if seen.Transcript && seen.Working.Turn == agent.TurnRunning {
			st.State, st.Block, st.Reason = StateWorking, "", ""
			return move{Write: "the agent works again"}
		}
	}
	return move{}
}

// decideError decides a turn that ended with an error: a usage limit that
// names its reset parks the stage until then (issue 17), once; a usage
// limit again after the one resume, one with no reset that reads, or any
// other error blocks it. Until the resume shows in the transcript, the
// error read is the one before it.
func decideError(st *StageRecord, seen workingSeen) move {
	switch {
	case st.Resumed && !seen.Resumed:
		return move{}
	case seen.Limited && st.Resumed:
		block(st, BlockError, "the provider's usage limit was reached again after the one resume: "+seen.ErrorText)
	case seen.Limited && !seen.Reset.IsZero():
		now, until := seen.Now, seen.Reset
		st.State, st.ParkedAt, st.ParkedUntil = StateParked, &now, &until
		st.Reason = fmt.Sprintf("the provider's usage limit was reached; flume resumes it once at %s", until.Format("2006-01-02 15:04 MST"))
		return move{Write: "parked: " + st.Reason}
	case seen.Limited:
		block(st, BlockError, "the provider's usage limit was reached, with no reset time flume can read: "+seen.ErrorText)
	default:
		block(st, BlockError, "the agent's turn ended with an error: "+seen.ErrorText)
	}
	return move{Write: "blocked: " + st.Reason}
}

// decideParked decides a parked stage: once its reset has passed, its
// agent gets the one follow-up and the stage works again; the time parked
// is not counted against its budget (W1).
func decideParked(st *StageRecord, seen stepSeen) move {
	if st.ParkedUntil == nil || seen.Now.Before(*st.ParkedUntil) || seen.Busy || st.Resumed {
		return move{}
	}
	if st.ParkedAt != nil {
		st.ParkedMs += max(seen.Now.Sub(*st.ParkedAt), 0).Milliseconds()
	}
	st.ParkedAt, st.ParkedUntil = nil, nil
	return move{Tell: ResumeMessage, Sent: &st.Resumed, State: StateWorking, Write: "usage limit reset: sent the one follow-up to resume"}
}
