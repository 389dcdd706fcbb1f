// Decisions of the engine that need no I/O: given what a step observed,
// what moves. The step observes (transcript, screen, git), calls these, and
// applies what they say (a record write, one follow-up typed). They are
// table-tested without tmux or a clock (decide_test.go).

package stage

import (
	"fmt"
	"time"

	"github.com/git-flume/git-flume/agent"
)

// workingSeen is what a step observed of a stage whose agent works,
// waits or is stuck: its transcript, read once.
type workingSeen struct {
	Need string // the open NEEDS: of the newest message, "" when none
	Turn string // how the last turn ended (agent.Turn…)
	// ErrorText is the error a turn ended with.
	ErrorText string
	// LengthRetried: the length recovery prompt shows in the transcript.
	LengthRetried bool
	Quiet         time.Duration // since the transcript last changed
}

// move is what the engine does next: nothing (both empty), a record write
// with message Write, or Tell typed first (only into a ready composer,
// X3) and, once typed, *Sent set and Write recorded.
type move struct {
	Write string
	Tell  string
	Sent  *bool
}

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
	// A8: checkpoint recovery, one follow-up of each kind at most.
	switch seen.Turn {
	case agent.TurnError:
		st.State, st.Reason = StateBlocked, "the agent's turn ended with an error: "+seen.ErrorText
		return move{Write: "blocked: " + st.Reason}
	case agent.TurnLength:
		if !st.LengthPrompted {
			return move{Tell: LengthMessage, Sent: &st.LengthPrompted, Write: "reply cut for length: sent the one recovery prompt"}
		}
		if seen.LengthRetried {
			st.State, st.Reason = StateBlocked, "its reply was cut for length again after the recovery prompt"
			return move{Write: "blocked: " + st.Reason}
		}
	case agent.TurnDone:
		if !st.Reminded && seen.Quiet >= remindAfter {
			return move{Tell: reminder(st), Sent: &st.Reminded, Write: "turn ended with neither the deliverable nor NEEDS:; sent the one reminder"}
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
