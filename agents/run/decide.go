package run

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/git-flume/git-flume/agents"
)

// Policy is what differs, on purpose, between kinds of run. Everything not
// here is decided the same way for a stage, the worker and a delegated
// place.
type Policy struct {
	// Window is how long a sent prompt may take to show in the
	// transcript before it is checked and sent once more (A3).
	Window time.Duration
	// Grace is how long an agent whose deliverable is in git may still
	// take to close its turn (W2); 0 ends it at once.
	Grace time.Duration
	// Remind is how long a turn that ended with neither deliverable nor
	// need stays quiet before the one reminder (A8).
	Remind time.Duration
	// Stuck is how long a run may be quiet before it is stuck (A7), unless
	// its Life names its own limit.
	Stuck time.Duration
	// Reminder is the one reminder's text; "" when the deliverable is
	// the ended turn itself (TurnDelivers).
	Reminder string
	// TurnDelivers: a turn that ends, done and with no need, is the run's
	// deliverable (the workspace worker: its candidates are checked next).
	TurnDelivers bool
	// Steer: at three quarters of the budget the agent is told once to
	// land softly (W1); a stage's, not the worker's, which has a hard
	// maximum runtime.
	Steer bool
	// QuietEnds: a run quiet past its limit is cut (the worker's idle
	// limit), not reported stuck (a stage's: flume ends nothing, A7).
	QuietEnds bool
	// NeedEnds: a need ends the run, blocked, since nobody answers this
	// kind of run (the worker); otherwise the run waits for a tell (A6).
	NeedEnds bool
	// Recreate: a run may ask for a fresh session (RECREATE:).
	Recreate bool
	// StopShort: a turn that ends saying where the next round starts
	// (NEXT ROUND:) delivers the run, stopped short (a question's round,
	// K4).
	StopShort bool
	// BudgetName names the budget in a cut's reason ("budget", "maximum
	// runtime").
	BudgetName string
}

// Observation is what one step read of a run, each thing once: its
// transcript, its deliverable (judged by the caller, K6), its pane and
// screen where a decision turns on them, and its place.
type Observation struct {
	// Now is the timers' clock.
	Now time.Time
	// Found is a transcript just found for an agent that had none.
	Found string
	// Transcript: the agent's transcript was read; the fields below up to
	// Quiet come from it.
	Transcript bool
	// Confirmed: the run's prompt shows in the transcript (A3).
	Confirmed bool
	Need      string // the open NEEDS: of the newest message, "" when none
	// Recreate is the resume message of a newest message that asks for a
	// fresh session (RECREATE:), "" when none.
	Recreate string
	// NextRound is where a question's next round starts, as a newest
	// message that stopped short says it (NEXT ROUND:), "" when none.
	NextRound string
	Turn      string // how the last turn ended (agent.Turn…)
	ErrorText string // the error a turn ended with
	// LengthRetried, Reminded, Resumed: that follow-up shows in the
	// transcript.
	LengthRetried, Reminded, Resumed bool
	// Limited: the turn's error is a usage limit, naming Reset (zero when
	// it names none that reads).
	Limited bool
	Reset   time.Time
	// Quiet is how long since the transcript (or, before one, the prompt)
	// last moved.
	Quiet         time.Duration
	LastAssistant string
	// Refused is the newest line of a tool's result where the system
	// refused it (the sandbox, A12): evidence, never a decision.
	Refused string
	// Delivered: the run's deliverable is in git (the caller judged it);
	// What says what it is.
	Delivered bool
	What      string
	// Up: the agent runs in its pane. Exit, when it does not, is how it
	// ended (read only for an agent flume runs in a pane).
	Up   bool
	Exit *agent.Exit
	// EndScreen is what the pane of an agent that ended by itself before
	// its prompt showed last showed, where its host kept it
	// (agent.EndScreen).
	EndScreen string
	// PlaceGone says why the run's place is no longer its worktree, ""
	// while it is (A10).
	PlaceGone string
	// Permission is a permission the agent asked for and nobody has
	// answered, in the program's own words, from its own hooks (A11):
	// ranked above the screen, whatever the dialog looks like.
	Permission string
	// Stopped is when the agent's own Stop hook said the turn of the
	// transcript's newest line ended, zero when it has not.
	Stopped time.Time
	// Screen is the pane's screen where a decision turns on it; nil
	// otherwise.
	Screen *agent.Screen
	// Busy: a follow-up could not be typed at this step (the composer was
	// busy, or the agent gone). Decide then proposes no typing.
	Busy bool
}

// Move is what a step does next. Nothing when all is empty. Otherwise: Tell
// typed first (only into a ready composer, X3) and, once typed, the new run
// recorded with Write; End: the agent ended and verified gone (X5), the
// work tree kept in a snapshot named End (W3), then recorded; Resend: the
// prompt checked on screen and sent once more or the run resolved
// (Resent); else a plain record write.
type Move struct {
	Write  string
	Tell   string
	End    string
	Resend bool
	// Delivered: the run delivered What; the caller closes what it
	// delivered for (a stage's report and next stage, the worker's
	// checks).
	Delivered bool
	What      string
	// Recreate: the run ended for a fresh session told Followup.
	Recreate bool
	Followup string
}

// Snapshot names of the moves that end an agent.
const (
	SnapshotEnd = "end"
	SnapshotCut = "cut"
)

// Decide is the one decision for a run under way: from what a step
// observed, the run as it is to be recorded and the move that gets it
// there. It never changes r. In order: a transcript found, the prompt
// confirmed (A3), a dialog answered by hand, the deliverable (K6: a
// finished turn for the worker, a round's NEXT ROUND: for a question,
// waited for while its prompt has not shown yet), then, for an agent
// still running: its place gone, its end (A10), the budget
// (W1), and the run's state: blocked, parked, starting (A3, X3) or at work
// (A6, A7, A8), where a dialog mid-turn blocks it (A10).
func Decide(r Run, o Observation, p Policy) (Run, Move) {
	r = r.clone()
	a := r.Agent
	running := r.Running()
	if running && o.Found != "" {
		a.Transcript = o.Found
		return r, Move{Write: "transcript " + o.Found}
	}
	// A3: the prompt's arrival is recorded before anything it led to, so
	// the history reads "confirmed" before "delivered".
	if running && Starting(r.State) && o.Confirmed {
		r.State, r.Reason = StateWorking, ""
		return r, Move{Write: "prompt confirmed in the transcript"}
	}
	if running && r.BlockedBy() == BlockDialog && o.Confirmed && o.Permission == "" && o.Screen != nil && !o.Screen.Dialog && o.Up {
		r.State, r.Block, r.Reason = StateWorking, "", ""
		return r, Move{Write: "the dialog was answered: prompt confirmed in the transcript"}
	}
	if p.TurnDelivers && o.Transcript && o.Confirmed && o.Turn == agent.TurnDone && o.Need == "" && o.Recreate == "" {
		o.Delivered, o.What = true, cmp.Or(o.What, "its turn ended")
	}
	if p.StopShort && !o.Delivered && o.Transcript && o.Confirmed && o.Turn == agent.TurnDone && o.Need == "" && o.NextRound != "" {
		o.Delivered, o.What = true, "stopped short; the next round starts: "+o.NextRound
	}
	if o.Delivered && running && Starting(r.State) {
		// A3 before K6: Claude Code writes its transcript behind its work
		// (its flush lags), so a fast agent's commit can be in git before
		// its prompt is in its transcript. While the agent is up and its
		// window runs, the next step reads the transcript again; after
		// that the delivery says what was never proven.
		if o.Transcript && o.Up && o.Now.Sub(a.SentAt) < p.Window {
			return r, Move{}
		}
		o.What += " (its prompt never showed in its transcript)"
	}
	if o.Delivered {
		return decideDelivered(r, o, p)
	}
	if !running {
		return r, Move{}
	}
	return decideRunning(r, o, p)
}

// decideRunning decides a run whose agent flume has not seen end, once the
// evidence it cannot overlook (transcript, prompt, deliverable) was
// decided: its place gone and its end (A10), the budget (W1), then its
// state. r is Decide's own copy.
func decideRunning(r Run, o Observation, p Policy) (Run, Move) {
	a := r.Agent
	if o.PlaceGone != "" && (r.BlockedBy() != BlockPlace || r.Reason != o.PlaceGone) {
		// A10: nothing is started anywhere else; the agent is left to the
		// operator (it may still hold work), the run blocked. Said again
		// when it changes: a folder being deleted is first no worktree,
		// then gone.
		r.Blocked(BlockPlace, o.PlaceGone)
		return r, Move{Write: "blocked: " + o.PlaceGone}
	}
	if !a.Printed() && !o.Up && o.Exit != nil {
		// A run's start is recorded before its pane opens (K1): within
		// its window a pane not there yet is slow, not gone.
		if Starting(r.State) && o.Exit.Closed && o.Now.Sub(a.SentAt) < p.Window {
			return r, Move{}
		}
		return decideExited(r, o)
	}
	if mv, ok := decideBudget(&r, o, p); ok {
		return r, told(&r, mv, o.Now)
	}
	switch {
	case r.State == StateBlocked:
		return r, decideBlocked(&r, o)
	case r.State == StateParked:
		return r, told(&r, decideParked(&r, o), o.Now)
	case Starting(r.State):
		return r, decideStarting(&r, o, p)
	case (r.State == StateWorking || r.State == StateStuck || r.State == StateWaiting) && o.Transcript:
		if o.Permission != "" {
			// A11: the program said, through its own hooks, that it waits
			// for a permission; its words, whatever its screen.
			r.Blocked(BlockDialog, PermissionReason(o.Permission))
			return r, Move{Write: "blocked: " + r.Reason}
		}
		if o.Screen != nil && o.Screen.Dialog {
			// A10: a dialog mid-turn (a permission prompt) is never typed
			// into; someone answers it in the pane (attach).
			r.Blocked(BlockDialog, DialogReason(o.Screen.Words))
			return r, Move{Write: "blocked: " + o.Screen.Words}
		}
		before := r.clone()
		mv := decideWorking(&r, o, p)
		if mv.Tell != "" && o.Busy {
			return before, Move{} // a later step types it
		}
		return r, told(&r, mv, o.Now)
	}
	return r, Move{}
}

// told records the follow-up move mv types, if any, in r: one tell more,
// the last at now.
func told(r *Run, mv Move, now time.Time) Move {
	if mv.Tell != "" && r.Agent != nil {
		r.Agent.Tells++
		r.Agent.ToldAt = &now
	}
	return mv
}

// decideDelivered decides a run whose deliverable is in git (K6): an agent
// still in its turn gets a grace to close it (W2); then the agent is ended
// (K1, X5) and the caller closes the delivery.
func decideDelivered(r Run, o Observation, p Policy) (Run, Move) {
	if a := r.Agent; a != nil && !a.Ended && o.Transcript && o.Turn == agent.TurnRunning && o.Up && p.Grace > 0 {
		if r.Landing == nil {
			now := o.Now
			r.Landing = &now
			// An agent that was waiting or stuck is at work again: its
			// deliverable says so, and nobody is to answer it now.
			if r.State == StateWaiting || r.State == StateStuck {
				r.State, r.Need = StateWorking, ""
			}
			return r, Move{Write: "deliverable in git; the agent closes its turn"}
		}
		if o.Now.Sub(*r.Landing) < p.Grace {
			return r, Move{}
		}
	}
	now := o.Now
	r.State, r.Ended, r.Need = StateDelivered, &now, ""
	return r, Move{End: SnapshotEnd, Delivered: true, What: o.What, Write: "delivered: " + o.What}
}

// decideExited decides an agent that ended by itself before it delivered
// (A10): a run whose prompt never showed never started (A3); any other is
// blocked with how it ended and its last message. A run that never
// started says what its screen last showed: a program that fails before
// it writes a transcript leaves its reason there and nowhere else (a
// screen left mid-turn is the agent's own interface, its words are in the
// transcript). The agent is recorded ended once what it left is closed
// and kept.
func decideExited(r Run, o Observation) (Run, Move) {
	now := o.Now
	r.Ended = &now
	r.Agent.Exit = o.Exit
	if Starting(r.State) {
		r.State, r.Reason = StateNeverStarted, "the agent ended before its prompt showed in its transcript: "+o.Exit.String()
		if o.EndScreen != "" {
			r.Reason += fmt.Sprintf("; its screen's last lines: %q", o.EndScreen)
		}
		return r, Move{End: SnapshotEnd, Write: "never started: " + r.Reason}
	}
	reason := "the agent ended before it delivered: " + o.Exit.String()
	if last := lastLine(o.LastAssistant); last != "" {
		reason += fmt.Sprintf("; its last message: %q", last)
	}
	r.Blocked(BlockExited, reason)
	return r, Move{End: SnapshotEnd, Write: "blocked: " + reason}
}

// lastLine is the last non-empty line of a message, clipped.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if r := []rune(line); len(r) > 160 {
		line = string(r[:160]) + "…"
	}
	return line
}

// decideBudget decides a run's budget (W1), on the timers' clock from its
// start: used up, the agent is ended and the run cut; at three quarters,
// a steered run's agent is told once to land softly. ok is false when the
// budget decides nothing.
func decideBudget(r *Run, o Observation, p Policy) (mv Move, ok bool) {
	budget := time.Duration(r.BudgetMs) * time.Millisecond
	if budget <= 0 || r.Started == nil || r.State == StateParked {
		return Move{}, false
	}
	switch used := o.Now.Sub(*r.Started) - time.Duration(r.ParkedMs)*time.Millisecond; {
	case used >= budget:
		now := o.Now
		r.State, r.Reason, r.Ended = StateCut, fmt.Sprintf("its %s of %s was used up", cmp.Or(p.BudgetName, "budget"), budget), &now
		return Move{End: SnapshotCut, Write: "cut: " + r.Reason}, true
	case p.Steer && used >= budget*3/4 && !r.Told && !Starting(r.State) && r.State != StateBlocked && !o.Busy:
		r.Told = true
		return Move{Tell: BudgetMessage, Write: "three quarters of the budget used: told the agent to finish"}, true
	}
	return Move{}, false
}

// decideStarting decides a run whose prompt is not confirmed yet (A3,
// X3): within its window slow is not failed, but a dialog on screen is
// known at once; past it, an operator's agent (print) with no transcript
// is unknown and watched, and any other gets its prompt checked and sent
// once more.
func decideStarting(r *Run, o Observation, p Policy) Move {
	a := r.Agent
	if o.Now.Sub(a.SentAt) < p.Window {
		if o.Permission != "" {
			r.Blocked(BlockDialog, PermissionReason(o.Permission))
			return Move{Write: "blocked: " + r.Reason}
		}
		if o.Screen != nil && o.Screen.Dialog {
			r.Blocked(BlockDialog, DialogReason(o.Screen.Words))
			return Move{Write: "blocked: " + o.Screen.Words}
		}
		return Move{}
	}
	if a.Printed() {
		// The operator starts it: flume only watches (A3).
		if !o.Transcript && r.State != StateUnknown {
			r.State = StateUnknown
			return Move{Write: "no transcript yet"}
		}
		return Move{}
	}
	return Move{Resend: true}
}

// decideBlocked decides a blocked run whose agent still runs, once its
// dialog (Decide) and its deliverable were decided: after an error, a
// length cut or a failed reminder, a turn running again (someone answered
// in the pane) works again.
func decideBlocked(r *Run, o Observation) Move {
	switch r.BlockedBy() {
	case BlockDialog:
		// A11: the program's later word on the same wait (Claude Code's
		// notification, just after its request) replaces the summary the
		// run was blocked with when a step fell between the two.
		if why := PermissionReason(o.Permission); o.Permission != "" && strings.HasPrefix(r.Reason, PermissionReason("")) && r.Reason != why {
			r.Reason = why
			return Move{Write: "blocked: " + why}
		}
	case BlockError, BlockLength, BlockReminded:
		if o.Transcript && o.Turn == agent.TurnRunning {
			r.State, r.Block, r.Reason = StateWorking, "", ""
			return Move{Write: "the agent works again"}
		}
	}
	return Move{}
}

// decideWorking decides a working, waiting or stuck run (A6, A7, A8): a
// need waits (or ends a run nobody answers), an answered need works again,
// a turn that errs blocks or parks, a reply cut for length gets the one
// recovery prompt (and blocks when cut again after it), a turn that ended
// with neither the deliverable nor a need gets the one reminder, a quiet
// transcript is stuck (or cut), and one that moves again is active.
func decideWorking(r *Run, o Observation, p Policy) Move {
	if o.Need != "" {
		if p.NeedEnds {
			r.Blocked(BlockNeed, "the agent needs: "+o.Need)
			r.Need = o.Need
			return Move{End: SnapshotEnd, Write: "blocked: " + r.Reason}
		}
		if r.State != StateWaiting || r.Need != o.Need {
			r.State, r.Need = StateWaiting, o.Need
			return Move{Write: "waiting: " + o.Need}
		}
		return Move{}
	}
	if r.State == StateWaiting {
		// The newest message no longer stops short: answered.
		r.State, r.Need = StateWorking, ""
		return Move{Write: "need answered"}
	}
	if r.State == StateWorking && o.Turn != agent.TurnDone && o.Turn != agent.TurnInterrupted && strings.HasPrefix(r.Reason, idlePrefix) {
		r.Reason = ""
		return Move{Write: "at work again"}
	}
	if o.Recreate != "" && p.Recreate {
		return decideRecreate(r, o.Recreate)
	}
	// A8: checkpoint recovery, one follow-up of each kind at most.
	switch o.Turn {
	case agent.TurnError:
		return decideError(r, o)
	case agent.TurnLength:
		if !r.LengthPrompted {
			r.LengthPrompted = true
			return Move{Tell: LengthMessage, Write: "reply cut for length: sent the one recovery prompt"}
		}
		if o.LengthRetried {
			r.Blocked(BlockLength, "its reply was cut for length again after the recovery prompt")
			return Move{Write: "blocked: " + r.Reason}
		}
	case agent.TurnDone:
		if mv, ok := decideTurnDone(r, o, p); ok {
			return mv
		}
	case agent.TurnInterrupted:
		// A person stopped the turn: shown at once; no reminder goes,
		// the agent waits for a tell (or is stuck past its limit).
		if why := InterruptedReason(o.Now.Add(-o.Quiet)); r.State == StateWorking && r.Reason != why {
			r.Reason = why
			return Move{Write: "idle: " + why}
		}
	}
	return decideQuiet(r, o, p)
}

// decideTurnDone decides a turn that ended with neither the deliverable
// nor a need (A8): shown idle at once with when the one reminder goes
// (A11), the reminder once quiet long enough, blocked when the turn
// after it ends the same way. ok is false when it decides nothing.
func decideTurnDone(r *Run, o Observation, p Policy) (Move, bool) {
	switch {
	case p.Reminder == "":
	case !r.Reminded && o.Quiet >= p.Remind:
		r.Reminded = true
		if strings.HasPrefix(r.Reason, idlePrefix) {
			r.Reason = ""
		}
		return Move{Tell: p.Reminder, Write: "turn ended with neither the deliverable nor NEEDS:; sent the one reminder"}, true
	case !r.Reminded && r.State == StateWorking:
		// A11: idle is shown at once, with when the reminder goes, not
		// only when it goes.
		ended := o.Now.Add(-o.Quiet)
		if !o.Stopped.IsZero() {
			ended = o.Stopped
		}
		if why := IdleReason(ended, o.Now.Add(p.Remind-o.Quiet)); r.Reason != why {
			r.Reason = why
			return Move{Write: "idle: " + why}, true
		}
	case r.Reminded && o.Reminded && o.Quiet >= p.Remind:
		r.Blocked(BlockReminded, "its turn ended again with neither the deliverable nor NEEDS: after the one reminder")
		return Move{Write: "blocked: " + r.Reason}, true
	}
	return Move{}, false
}

// decideQuiet decides a run by how long its transcript has been quiet
// (A7): past its limit it is stuck (a stage: flume ends nothing) or cut
// (QuietEnds: the worker's idle limit); one that moves again is active.
func decideQuiet(r *Run, o Observation, p Policy) Move {
	stuck := p.Stuck
	if r.StuckAfterMs > 0 {
		stuck = time.Duration(r.StuckAfterMs) * time.Millisecond
	}
	switch {
	case p.QuietEnds && o.Quiet > stuck:
		now := o.Now
		r.State, r.Reason, r.Ended = StateCut, fmt.Sprintf("its transcript was quiet past its limit of %s", stuck), &now
		return Move{End: SnapshotCut, Write: "cut: " + r.Reason}
	case r.State == StateWorking && o.Quiet > stuck:
		r.State = StateStuck
		r.Reason = fmt.Sprintf("quiet for %s with no deliverable and no need", o.Quiet.Round(time.Second))
		return Move{Write: "stuck: " + r.Reason}
	case r.State == StateStuck && o.Quiet <= stuck:
		r.State, r.Reason = StateWorking, ""
		return Move{Write: "active again"}
	}
	return Move{}
}

// decideRecreate decides a turn that ended asking for a fresh session
// (RECREATE:): the agent is ended and verified gone, and a fresh one is
// told the resume message; past MaxRecreations the run blocks with the
// request as its reason.
func decideRecreate(r *Run, resume string) Move {
	if r.Recreated >= MaxRecreations {
		r.Blocked(BlockRecreated, fmt.Sprintf("its runs asked for a fresh session %d times; the last asked: %s", r.Recreated+1, resume))
		return Move{Write: "blocked: " + r.Reason}
	}
	r.Recreated++
	r.State = StatePending
	return Move{End: SnapshotEnd, Recreate: true, Followup: RecreatedNote + resume,
		Write: "the agent asked for a fresh session: ended; a fresh one starts with its resume message"}
}

// decideError decides a turn that ended with an error: a usage limit that
// names its reset parks the run until then, once; a usage limit again after
// the one resume, one with no reset that reads, or any other error blocks
// it. Until the resume shows in the transcript, the error read is the one
// before it.
func decideError(r *Run, o Observation) Move {
	switch {
	case r.Resumed && !o.Resumed:
		return Move{}
	case o.Limited && r.Resumed:
		r.Blocked(BlockError, "the provider's usage limit was reached again after the one resume: "+o.ErrorText)
	case o.Limited && !o.Reset.IsZero():
		now, until := o.Now, o.Reset
		r.State, r.ParkedAt, r.ParkedUntil = StateParked, &now, &until
		r.Reason = fmt.Sprintf("the provider's usage limit was reached; flume resumes it once at %s", until.Format("2006-01-02 15:04 MST"))
		return Move{Write: "parked: " + r.Reason}
	case o.Limited:
		r.Blocked(BlockError, "the provider's usage limit was reached, with no reset time flume can read: "+o.ErrorText)
	default:
		r.Blocked(BlockError, "the agent's turn ended with an error: "+o.ErrorText)
	}
	return Move{Write: "blocked: " + r.Reason}
}

// decideParked decides a parked run: once its reset has passed, its agent
// gets the one follow-up and the run works again; the time parked is not
// counted against its budget (W1).
func decideParked(r *Run, o Observation) Move {
	if r.ParkedUntil == nil || o.Now.Before(*r.ParkedUntil) || o.Busy || r.Resumed {
		return Move{}
	}
	if r.ParkedAt != nil {
		r.ParkedMs += max(o.Now.Sub(*r.ParkedAt), 0).Milliseconds()
	}
	r.ParkedAt, r.ParkedUntil = nil, nil
	r.Resumed, r.State, r.Reason = true, StateWorking, ""
	return Move{Tell: ResumeMessage, Write: "usage limit reset: sent the one follow-up to resume"}
}

// Resent decides the run after its prompt was checked on screen and sent
// once more, or not (A3): an agent that exited never started, a busy one is
// slow (nothing), a screen that is not the composer blocks with its words,
// a second miss never started; a sent prompt opens a new window, and a run
// whose program has written no transcript yet is watched as unknown.
func Resent(r Run, res agent.Resent, o Observation, p Policy) (Run, Move) {
	r = r.clone()
	a := r.Agent
	switch {
	case res.Exited:
		r.State, r.Reason = StateNeverStarted, "the agent exited before its prompt showed in its transcript"
		a.Ended = true
		return r, Move{Write: "never started: agent exited"}
	case res.Busy:
		return r, Move{} // slow is not failed
	case res.Blocked != "":
		r.Blocked(BlockDialog, DialogReason(res.Blocked))
		return r, Move{Write: "blocked: " + res.Blocked}
	case res.GaveUp:
		r.State, r.Reason = StateNeverStarted, fmt.Sprintf("the prompt was sent %d times and never showed in the transcript", a.Sends)
		return r, Move{Write: "never started"}
	}
	if !o.Transcript && r.State == StateStarting {
		// The program has not written its transcript yet: watch it.
		r.State = StateUnknown
	}
	a.Sends++
	a.SentAt = o.Now
	return r, Move{Write: fmt.Sprintf("prompt not confirmed within %s; sent again", p.Window)}
}
