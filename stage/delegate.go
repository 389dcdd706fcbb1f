// Delegated places (the seeds' "unfolding"): a place launched
// from inside a place whose role delegates to its kind is that place's
// child. Its commissioner has one open direct child at a time and resolves
// it with accept, reopen, unblock or rollback.

package stage

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-flume/git-flume/agents"
	agentrun "github.com/git-flume/git-flume/agents/run"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
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

// CallerPlace is the place whose agent runs this command ($FLUME_PLACE,
// set for every agent flume starts), "" for a person's shell.
func CallerPlace(env *Env) string {
	from := ""
	for _, kv := range env.CallerEnv {
		if v, ok := strings.CutPrefix(kv, "FLUME_PLACE="); ok {
			from = v
		}
	}
	return from
}

// PlaceAt is the place whose worktree repo was opened in (a launch run
// from inside a place's folder, with or without $FLUME_PLACE: A9), "" when
// it is not a place's.
func PlaceAt(ctx context.Context, store *refs.Store, repo *git.Repo) string {
	if repo.Bare || repo.GitDir == repo.CommonDir || filepath.Base(filepath.Dir(repo.Dir)) != PlacesDir {
		return ""
	}
	id := filepath.Base(repo.Dir)
	if _, err := PlaceID(id); err != nil {
		return ""
	}
	if _, p, err := ReadPlace(ctx, store, id); err == nil && p.Path == repo.Dir {
		return id
	}
	return ""
}

// PromptNotes are what a stage's prompt says after its own text: the
// standing orders; how to delegate, when its role delegates; how a
// delegated place ends its turn; and what the stage's last run, the last
// round or its commissioner left for this run.
func PromptNotes(p *Place, st *StageRecord, role *Role) string {
	var b strings.Builder
	b.WriteString("\n\n" + agent.StandingOrders)
	if role != nil && len(role.DelegatesTo) > 0 {
		fmt.Fprintf(&b, "\n\nYou may delegate part of this work to a place of its own, of kind %s: run "+
			"`git flume launch --kind KIND --brief 'WHAT IT IS TO DO'` from your place. One delegation is open at a time. "+
			"`git flume wait CHILD` returns once it is finished or blocked; then resolve it with `git flume accept CHILD` "+
			"(its commits join your branch), `git flume reopen CHILD --why 'REASON'`, `git flume unblock CHILD --with 'TEXT'`, "+
			"or `git flume rollback --delegation CHILD` (its work and your work tree back as they were before you delegated).",
			strings.Join(role.DelegatesTo, ", "))
	}
	if d := p.Parent; d != nil {
		fmt.Fprintf(&b, "\n\nThis place was delegated by %s: your work joins its branch when it accepts it. "+
			"End your turn with this stage's deliverable in git (finished), or with a line starting with NEEDS: (blocked). "+
			"If you need a fresh session instead, end your turn with a line starting with RECREATE: and the message the fresh session is to start from.",
			d.Parent)
	}
	if st.Followup != "" {
		b.WriteString("\n\n" + st.Followup)
	}
	return b.String()
}

// CheckCommissioner refuses a delegation verb on p unless p is a delegated
// place and the caller is its commissioner's agent or a person (no place
// of its own): a child never resolves itself, nor does another place.
func CheckCommissioner(env *Env, p *Place, verb string) error {
	if p.Parent == nil {
		return &RefusedError{Place: p.ID, Reason: "it is not a delegated place; there is nothing to " + verb}
	}
	if from := CallerPlace(env); from != "" && from != p.Parent.Parent {
		return &RefusedError{Place: p.ID, Reason: fmt.Sprintf("only its commissioner %s (or a person) may %s it, not %s", p.Parent.Parent, verb, from)}
	}
	return nil
}

// MaxTreeDepth bounds how deep status draws a tree of delegated places;
// a place deeper than that (no real delegation goes there; a hostile
// remote's chain of records may) starts a tree of its own.
const MaxTreeDepth = 8
