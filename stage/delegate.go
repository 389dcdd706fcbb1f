// Delegated places (issue 17, the seeds' "unfolding"): a place launched
// from inside a place whose role delegates to its kind is that place's
// child. Its commissioner has one open direct child at a time and resolves
// it with accept, reopen, unblock or rollback.

package stage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-flume/git-flume/agent"

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
	if p.Current == len(p.Stages)-1 && (last.State == StateDelivered || last.State == StateLanded) {
		return DelegationFinished
	}
	switch p.Stages[p.Current].State {
	case StateWaiting, StateStuck, StateBlocked, StateNeverStarted, StateCut:
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

// callerPlace is the place whose agent runs this command ($FLUME_PLACE,
// set for every agent flume starts), "" for a person's shell.
func callerPlace(env *Env) string {
	from := ""
	for _, kv := range env.CallerEnv {
		if v, ok := strings.CutPrefix(kv, "FLUME_PLACE="); ok {
			from = v
		}
	}
	return from
}

// placeAt is the place whose worktree repo was opened in (a launch run
// from inside a place's folder, with or without $FLUME_PLACE: A9), "" when
// it is not a place's.
func placeAt(ctx context.Context, store *refs.Store, repo *git.Repo) string {
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

// commission is the place a launch is delegated from, as read.
type commission struct {
	rec *refs.Record
	p   *Place
}

// checkDelegation refuses a launch made from inside a place (the caller's
// FLUME_PLACE) unless the role of that place's current stage delegates to
// the kind (A9), and unless that place is at home here with no open
// direct child (issue 17). It returns the commissioner, nil for a launch
// from a person's shell.
func checkDelegation(ctx context.Context, env *Env, repo *git.Repo, store *refs.Store, kind string) (*commission, error) {
	from := callerPlace(env)
	if from == "" {
		from = placeAt(ctx, store, repo)
	}
	if from == "" {
		return nil, nil
	}
	refuse := func(why string) error {
		return &RefusedError{Place: from, Reason: "a launch of a " + kind + " from inside this place is refused: " + why}
	}
	rec, p, err := ReadPlace(ctx, store, from)
	if err != nil {
		return nil, refuse("it is not a place of this repository")
	}
	if p.Current < len(p.Stages) && p.Stages[p.Current].State == StagePending {
		// Issue 28: the role is its stage's once it starts; saying it
		// names none misled.
		st := p.Stages[p.Current]
		return nil, refuse(fmt.Sprintf("its stage %s has not started: a child is launched by that stage's agent once it runs (git flume advance %s starts it)", st.Name, p.ID))
	}
	if p.Current >= len(p.Stages) || p.Stages[p.Current].Role == "" {
		return nil, refuse("its stage names no role that delegates")
	}
	role, err := LoadRole(ctx, repo, p.Base, p.Stages[p.Current].Role)
	if err != nil {
		return nil, refuse(err.Error())
	}
	if !slices.Contains(role.DelegatesTo, kind) {
		return nil, refuse(fmt.Sprintf("role %s delegates to %v, not %s", role.Name, role.DelegatesTo, kind))
	}
	if p.Phase != PhaseMade {
		return nil, refuse("it is " + p.Phase)
	}
	if err := CheckHome(ctx, env, repo, p); err != nil {
		return nil, refuse(err.Error())
	}
	if open, err := OpenChild(ctx, store, p); err != nil {
		return nil, err
	} else if open != "" {
		return nil, refuse(fmt.Sprintf("its delegated place %s is still open: accept, reopen, unblock or roll it back first", open))
	}
	return &commission{rec: rec, p: p}, nil
}

// OpenChild is the direct child of p whose delegation is still open, ""
// when there is none. A child named in p's record that has no record (a
// launch cleaned up before it made anything) is not open.
func OpenChild(ctx context.Context, store *refs.Store, p *Place) (string, error) {
	for _, id := range slices.Backward(p.Children) {
		_, c, err := ReadPlace(ctx, store, id)
		var nf *NotFoundError
		if errors.As(err, &nf) {
			continue
		}
		if err != nil {
			return "", err
		}
		if c.Parent != nil && c.Parent.Parent == p.ID && DelegationOpen(c) {
			return id, nil
		}
	}
	return "", nil
}

// delegate readies a child about to be made as c's delegation: it starts
// from the commissioner's branch head and lands on its branch.
func delegate(ctx context.Context, env *Env, repo *git.Repo, c *commission, opts LaunchOptions) (target, base string, d *Delegation, err error) {
	if opts.Target != "" && opts.Target != c.p.Branch {
		return "", "", nil, fmt.Errorf("a delegated place lands on its commissioner's branch %s, not --target %s", c.p.Branch, opts.Target)
	}
	if opts.From != "" {
		return "", "", nil, fmt.Errorf("a delegated place starts from its commissioner's branch head; --from %s is refused", opts.From)
	}
	head, err := repo.ResolveRef(ctx, c.p.BranchRef())
	if err != nil {
		return "", "", nil, fmt.Errorf("commissioner %s: branch %s: %w", c.p.ID, c.p.Branch, err)
	}
	d = &Delegation{Parent: c.p.ID, Stage: c.p.Current, Run: c.p.Stages[c.p.Current].Runs, At: env.NowUTC()}
	return c.p.Branch, head, d, nil
}

// keepCommissioner keeps the commissioner's work tree, when dirty, as the
// delegation's start (W3), right before the child is made: a launch
// refused earlier leaves no snapshot behind.
func keepCommissioner(ctx context.Context, repo *git.Repo, c *commission, d *Delegation) error {
	start, err := takeSnapshot(ctx, repo, c.p, &c.p.Stages[c.p.Current], "delegate")
	d.Start = start
	return err
}

// commissionChange is the commissioner's side of a child's first
// transaction: the child's id added to its record, from the record as
// read now. A commissioner that meanwhile delegated elsewhere refuses.
func commissionChange(ctx context.Context, store *refs.Store, child *Place) (refs.Change, error) {
	rec, p, err := ReadPlace(ctx, store, child.Parent.Parent)
	if err != nil {
		return refs.Change{}, err
	}
	if open, err := OpenChild(ctx, store, p); err != nil {
		return refs.Change{}, err
	} else if open != "" && open != child.ID {
		return refs.Change{}, &RefusedError{Place: p.ID, Reason: fmt.Sprintf("its delegated place %s is still open", open)}
	}
	if !slices.Contains(p.Children, child.ID) {
		p.Children = append(p.Children, child.ID)
	}
	return refs.Change{Ref: rec.Ref, Old: rec, State: p, Message: fmt.Sprintf("delegate %s: to %s", p.ID, child.ID)}, nil
}

// promptNotes are what a stage's prompt says after its own text: the
// standing orders; how to delegate, when its role delegates; how a
// delegated place ends its turn; and what the stage's last run, the last
// round or its commissioner left for this run.
func promptNotes(p *Place, st *StageRecord, role *Role) string {
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
	if from := callerPlace(env); from != "" && from != p.Parent.Parent {
		return &RefusedError{Place: p.ID, Reason: fmt.Sprintf("only its commissioner %s (or a person) may %s it, not %s", p.Parent.Parent, verb, from)}
	}
	return nil
}

// MaxTreeDepth bounds how deep status draws a tree of delegated places;
// a place deeper than that (no real delegation goes there; a hostile
// remote's chain of records may) starts a tree of its own.
const MaxTreeDepth = 8
