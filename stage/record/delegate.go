// Delegated places (the seeds' "unfolding"): a place launched
// from inside a place whose role delegates to its kind is that place's
// child. Its commissioner has one open direct child at a time and resolves
// it with accept, reopen, unblock or rollback.

package record

import (
	"time"

	agentrun "github.com/git-flume/git-flume/agents/run"
)

// Delegation is a delegated place's link to its commissioner.
type Delegation struct {
	Parent string `json:"parent"`
	// Stage (an index) and Run are the commissioner's stage and run that
	// delegated: that run's cost row carries the child's share.
	Stage int `json:"stage"`
	Run   int `json:"run"`
	// Start is the commissioner's work tree as it delegated, when it
	// was dirty; its branch head then is the child's base. Rolling the
	// delegation back restores both.
	Start *Snapshot `json:"start,omitempty"`
	At    time.Time `json:"at"`
	// Outcome is "" while the delegation is open, then accepted or
	// rolled-back, at Closed. Restored records that a rollback put the
	// commissioner's branch and work tree back. Settled records that the
	// verb which closed it ran to its end, its tidy included, though that
	// tidy kept the place: a verb run after it was done says so, where a
	// rerun after a crash goes on.
	Outcome  string     `json:"outcome,omitempty"`
	Closed   *time.Time `json:"closed,omitempty"`
	Restored bool       `json:"restored,omitempty"`
	Settled  bool       `json:"settled,omitempty"`
}

// Outcomes of a delegation.
const (
	OutcomeAccepted   = "accepted"
	OutcomeRolledBack = "rolled-back"
)

// Where a delegated place stands for its commissioner.
const (
	DelegationWorking    = "working"
	DelegationFinished   = "finished" // its last stage delivered: waits to be accepted or reopened
	DelegationBlocked    = "blocked"  // a stage needs someone: waiting, stuck, blocked, cut, never started
	DelegationAccepted   = "accepted"
	DelegationRolledBack = "rolled-back"
	DelegationAborted    = "aborted" // dropped, or tidied without landing
)

// DelegationState is where delegated place p stands for its commissioner,
// "" for a top-level place.
func DelegationState(p *Place) string {
	d := p.Parent
	switch {
	case d == nil:
		return ""
	case d.Outcome == OutcomeAccepted:
		return DelegationAccepted
	case d.Outcome == OutcomeRolledBack:
		return DelegationRolledBack
	case p.Phase == PhaseTidied && p.Tidied != nil && p.Tidied.Reason == "landed":
		return DelegationAccepted // merged into the commissioner's branch by hand
	case p.Dropped != nil || p.Phase == PhaseTidied:
		return DelegationAborted
	case len(p.Stages) == 0:
		return DelegationWorking
	}
	last := p.Stages[len(p.Stages)-1]
	if p.Current == len(p.Stages)-1 && (last.State == agentrun.StateDelivered || last.State == StateLanded) {
		return DelegationFinished
	}
	switch p.Stages[p.Current].State {
	case agentrun.StateWaiting, agentrun.StateStuck, agentrun.StateBlocked, agentrun.StateNeverStarted, agentrun.StateCut:
		return DelegationBlocked
	}
	return DelegationWorking
}

// DelegationOpen reports a delegation its commissioner has not resolved.
func DelegationOpen(p *Place) bool {
	switch DelegationState(p) {
	case DelegationWorking, DelegationFinished, DelegationBlocked:
		return true
	}
	return false
}

// MaxTreeDepth bounds how deep status draws a tree of delegated places;
// a place deeper than that (no real delegation goes there; a hostile
// remote's chain of records may) starts a tree of its own.
const MaxTreeDepth = 8
