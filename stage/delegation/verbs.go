package delegation

import (
	"context"
	"errors"
	"fmt"
	"slices"

	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
)

// Options name a delegated place and what its commissioner says.
type Options struct {
	stage.PlaceOptions
	// Text is reopen's reason (--why) or unblock's answer (--with).
	Text string
}

// lockedDelegated reads delegated place o.Place as readDelegated does,
// then takes its commissioner's delegation lock and reads it again: the
// caller decides from what the verb that ran before it left. It returns
// the unlock.
func (v *Verbs) lockedDelegated(ctx context.Context, o stage.PlaceOptions, verb string) (*record.Place, func(), error) {
	p, err := v.readDelegated(ctx, o, verb)
	if err != nil {
		return nil, nil, err
	}
	unlock, err := v.git.LockDelegations(ctx, p.Parent.Parent)
	if err != nil {
		return nil, nil, err
	}
	if p, err = v.flow.ReadGated(ctx, o.Place, o.Gate); err != nil {
		unlock()
		return nil, nil, err
	}
	return p, unlock, nil
}

// readDelegated records what happened to delegated place id first (a
// blocked stage whose deliverable arrived is delivered), then reads it
// through the session gate (R8) and refuses a caller who is neither its
// commissioner nor a person.
func (v *Verbs) readDelegated(ctx context.Context, o stage.PlaceOptions, verb string) (*record.Place, error) {
	// Bring the record up to what its agent did; the gate reads it as it
	// is either way.
	v.flow.Advance(ctx, o.Place)
	p, err := v.flow.ReadGated(ctx, o.Place, o.Gate)
	if err != nil {
		return nil, err
	}
	return p, checkCommissioner(v.env, p, verb)
}

// Accept makes a finished delegated place's work part of its
// commissioner's branch and tidies it: its branch is merged in
// the commissioner's work tree (a fast-forward when the commissioner did
// not move), the delegation is recorded accepted, and the place is tidied
// as landed. A place with an open delegation of its own is refused; so is
// a merge git refuses (a conflict, or local changes it would overwrite),
// with git's words and nothing changed.
func (v *Verbs) Accept(ctx context.Context, o stage.PlaceOptions) (*record.Place, error) {
	env, store := v.env, v.store
	p, unlock, err := v.lockedDelegated(ctx, o, "accept")
	if err != nil {
		return nil, err
	}
	defer unlock()
	switch state := record.DelegationState(p); {
	case state == record.DelegationRolledBack:
		return nil, &stage.LostError{Place: p.ID, Verb: "accept", Outcome: record.OutcomeRolledBack}
	case p.Dropped != nil && p.Parent.Outcome == "":
		return nil, &stage.LostError{Place: p.ID, Verb: "accept", Outcome: "dropped"}
	case state == record.DelegationAccepted && closedBefore(p):
		return nil, &stage.RefusedError{Place: p.ID, Reason: "it was already accepted: its work is on " + p.Target + keptNote(p)}
	case state == record.DelegationFinished, state == record.DelegationAccepted:
	default:
		return nil, &stage.RefusedError{Place: p.ID, Reason: "it is " + state + ", not finished: only a finished delegation is accepted"}
	}
	if open, err := place.OpenChild(ctx, store, p); err != nil {
		return nil, err
	} else if open != "" {
		return nil, &stage.RefusedError{Place: p.ID, Reason: "its own delegated place " + open + " is still open: resolve it first"}
	}
	if p.Phase == record.PhaseMade {
		if err := v.mergeIntoCommissioner(ctx, p); err != nil {
			return nil, err
		}
	}
	env.FaultAt("accept:merged")
	if _, err := record.EditPlace(ctx, store, p.ID, func(cur *record.Place) (string, error) {
		switch {
		case cur.Parent == nil || cur.Parent.Outcome == record.OutcomeAccepted:
			return "", refs.ErrNoChange
		case cur.Parent.Outcome != "":
			// Never overwritten: the lock makes this a record edited by
			// hand, and it is said, not papered over.
			return "", &stage.LostError{Place: cur.ID, Verb: "accept", Outcome: cur.Parent.Outcome}
		case cur.Dropped != nil:
			return "", &stage.LostError{Place: cur.ID, Verb: "accept", Outcome: "dropped"}
		}
		at := env.NowUTC()
		cur.Parent.Outcome, cur.Parent.Closed = record.OutcomeAccepted, &at
		return "accept " + cur.ID + ": its work is on " + cur.Target, nil
	}); err != nil {
		return nil, err
	}
	env.FaultAt("accept:recorded")
	return v.tidyDelegated(ctx, o)
}

// closedBefore reports whether the verb that closed p's delegation ran to
// its end: p is tidied, or that verb's tidy kept it and it settled. A
// delegation closed but not settled is a verb cut short, which a rerun
// finishes.
func closedBefore(p *record.Place) bool {
	return p.Phase == record.PhaseTidied || p.Parent.Settled
}

// keptNote says why a closed delegation's place is still there.
func keptNote(p *record.Place) string {
	if p.Phase == record.PhaseTidied {
		return ""
	}
	kept := "its tidy kept it"
	if p.Kept != "" {
		kept += ": " + p.Kept
	}
	return "; " + kept + " (git flume tidy removes it once that is resolved)"
}

// mergeIntoCommissioner merges p's branch head into its commissioner's
// branch, in the commissioner's work tree, unless it is there already.
func (v *Verbs) mergeIntoCommissioner(ctx context.Context, p *record.Place) error {
	store, repo := v.store, v.git
	_, parent, err := record.ReadPlace(ctx, store, p.Parent.Parent)
	if err != nil {
		return err
	}
	if err := repo.CheckHome(ctx, parent); err != nil {
		return err
	}
	head, err := repo.ResolveRef(ctx, p.BranchRef())
	if err != nil {
		return fmt.Errorf("%s: branch %s: %w", p.ID, p.Branch, err)
	}
	onto, err := repo.ResolveRef(ctx, parent.BranchRef())
	if err != nil {
		return fmt.Errorf("%s: branch %s: %w", parent.ID, parent.Branch, err)
	}
	if in, err := repo.IsAncestor(ctx, head, onto); err != nil || in {
		return err
	}
	// the commissioner's stage records what it accepts before
	// the merge moves its branch, so its engine never takes the child's
	// commits (or the merge of them) for its own deliverable.
	if _, err := record.EditPlace(ctx, store, parent.ID, func(cur *record.Place) (string, error) {
		st := &cur.Stages[cur.Current]
		if slices.Contains(st.Accepted, head) {
			return "", refs.ErrNoChange
		}
		st.Accepted = append(st.Accepted, head)
		return fmt.Sprintf("%s %s: accepting %s at %.12s", st.Name, cur.ID, p.ID, head), nil
	}); err != nil {
		return err
	}
	if err := repo.Merge(ctx, parent.Path, head, fmt.Sprintf("Accept %s (git flume accept)", p.ID)); err != nil {
		return &stage.RefusedError{Place: p.ID, Reason: fmt.Sprintf("its branch could not be merged into %s in %s, and nothing was changed: %v", parent.Branch, parent.Path, err)}
	}
	return nil
}

// tidyDelegated tidies delegated place o.Place alone, the last step of the
// verb that closed its delegation, and returns it as it then stands. What
// tidy keeps it names (a dirty work tree, say), and the delegation is
// recorded settled: the verb ran to its end, and one run after it says the
// delegation was already closed instead of doing it again.
func (v *Verbs) tidyDelegated(ctx context.Context, o stage.PlaceOptions) (*record.Place, error) {
	store := v.store
	if err := v.flow.Tidy(ctx, o); err != nil {
		return nil, err
	}
	_, p, err := record.ReadPlace(ctx, store, o.Place)
	if err != nil || p.Phase == record.PhaseTidied {
		return p, err
	}
	rec, err := record.EditPlace(ctx, store, o.Place, func(cur *record.Place) (string, error) {
		if cur.Parent == nil || cur.Parent.Outcome == "" || cur.Parent.Settled {
			return "", refs.ErrNoChange
		}
		cur.Parent.Settled = true
		return "settle " + cur.ID + ": its delegation is " + cur.Parent.Outcome + "; tidy kept the place", nil
	})
	if err != nil {
		return nil, err
	}
	return record.DecodePlace(rec)
}

// Reopen sends a finished delegated place back: a fresh agent
// on its current stage, told why after the stage's prompt; the stage must
// deliver again from where the branch is now.
func (v *Verbs) Reopen(ctx context.Context, o Options) (*record.Place, error) {
	if o.Text == "" {
		return nil, fmt.Errorf("reopen needs the reason (--why)")
	}
	env := v.env
	_, unlock, err := v.lockedDelegated(ctx, o.PlaceOptions, "reopen")
	if err != nil {
		return nil, err
	}
	defer unlock()
	return v.flow.Restart(ctx, o.PlaceOptions, engine.RestartRules{Verb: "reopen", Delivered: true, Resume: true,
		Followup: "Your commissioner reopened this stage: " + o.Text,
		Check:    delegatedIn(env, "reopen", record.DelegationFinished, "only a finished delegation is reopened (a blocked one is unblocked)")})
}

// delegatedIn is restart's check for a commissioner's verb: the caller is
// the place's commissioner or a person, and the delegation stands in
// state, else it is refused with why.
func delegatedIn(env *stage.Env, verb, state, why string) func(*record.Place) error {
	return func(p *record.Place) error {
		if err := checkCommissioner(env, p, verb); err != nil {
			return err
		}
		if got := record.DelegationState(p); got != state {
			return &stage.RefusedError{Place: p.ID, Reason: "it is " + got + ", " + why}
		}
		return nil
	}
}

// Unblock moves a blocked delegated place on: with text, an
// agent that is up and waiting or quiet is told it, confirmed in its
// transcript (A4); otherwise the stage starts again with a fresh agent,
// told the text after the stage's prompt.
func (v *Verbs) Unblock(ctx context.Context, o Options) (*record.Place, error) {
	env, store := v.env, v.store
	p, unlock, err := v.lockedDelegated(ctx, o.PlaceOptions, "unblock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	blocked := delegatedIn(env, "unblock", record.DelegationBlocked, "not blocked: nothing to unblock")
	if err := blocked(p); err != nil {
		return nil, err
	}
	st := p.Stages[p.Current]
	if a := st.Agent; (st.State == agentrun.StateWaiting || st.State == agentrun.StateStuck) && a != nil && !a.Ended && v.flow.Up(ctx, a) {
		if o.Text == "" {
			return nil, &stage.RefusedError{Place: p.ID, Reason: "its agent waits for an answer: give it with --with"}
		}
		if err := v.flow.Tell(ctx, engine.TellOptions(o)); err != nil { // unblock tells its answer
			return nil, err
		}
		_, p, err := record.ReadPlace(ctx, store, o.Place)
		return p, err
	}
	how := engine.RestartRules{Verb: "unblock", Check: blocked}
	if o.Text != "" {
		how.Followup = "Your commissioner unblocked this stage: " + o.Text
	}
	o.Force = true // a blocked stage's agent gives way to the fresh one
	return v.flow.Restart(ctx, o.PlaceOptions, how)
}

// Rollback undoes a delegation that is still open:
// its own open delegations first, then the place is dropped (its agent
// ended, verified) and recorded rolled back, its branch and work tree go
// back to where it started, and its commissioner's branch and work tree to
// their state as it delegated. Nothing is lost: every state replaced is
// kept first in a snapshot under refs/flume/snapshots/. The place is then
// tidied.
func (v *Verbs) Rollback(ctx context.Context, o stage.PlaceOptions) (*record.Place, error) {
	p, unlock, err := v.lockedDelegated(ctx, o, "roll back")
	if err != nil {
		return nil, err
	}
	defer unlock()
	switch state := record.DelegationState(p); {
	case state == record.DelegationAccepted:
		return nil, &stage.LostError{Place: p.ID, Verb: "roll back", Outcome: record.OutcomeAccepted}
	case p.Dropped != nil && p.Parent.Outcome == "":
		return nil, &stage.LostError{Place: p.ID, Verb: "roll back", Outcome: "dropped"}
	case state == record.DelegationRolledBack && p.Parent.Restored && closedBefore(p):
		return nil, &stage.RefusedError{Place: p.ID, Reason: "it was already rolled back" + keptNote(p)}
	case p.Parent != nil && p.Parent.Outcome == record.OutcomeRolledBack:
		// A rollback cut short: it goes on from where it stopped.
	case !record.DelegationOpen(p):
		return nil, &stage.RefusedError{Place: p.ID, Reason: "its delegation is " + state + "; only an open one is rolled back"}
	}
	if err := v.rollbackSubtree(ctx, o, p.ID); err != nil {
		return nil, err
	}
	return v.tidyDelegated(ctx, o)
}

// rollbackSubtree rolls delegated place id back, its open descendants
// first, and tidies those descendants. The outcome is recorded first: it
// closes the delegation (no accept can win after it) and tells a rerun
// after a crash to go on; every step after it is done once and skipped
// when done (drop, the child's work kept and undone, the commissioner
// restored).
func (v *Verbs) rollbackSubtree(ctx context.Context, o stage.PlaceOptions, id string) error {
	env, store := v.env, v.store
	_, p, err := record.ReadPlace(ctx, store, id)
	if err != nil {
		return err
	}
	if open, err := place.OpenChild(ctx, store, p); err != nil {
		return err
	} else if open != "" {
		sub := o
		sub.Place = open
		if err := v.rollbackSubtree(ctx, sub, open); err != nil {
			return err
		}
		if _, err := v.tidyDelegated(ctx, sub); err != nil {
			return err
		}
	}
	if _, err := record.EditPlace(ctx, store, id, func(cur *record.Place) (string, error) {
		switch cur.Parent.Outcome {
		case record.OutcomeRolledBack:
			return "", refs.ErrNoChange
		case "":
		default:
			return "", &stage.LostError{Place: cur.ID, Verb: "roll back", Outcome: cur.Parent.Outcome}
		}
		at := env.NowUTC()
		cur.Parent.Outcome, cur.Parent.Closed = record.OutcomeRolledBack, &at
		return "roll back " + id + ": the delegation from " + cur.Parent.Parent + " is undone", nil
	}); err != nil {
		return err
	}
	env.FaultAt("rollback:recorded")
	if p.Phase == record.PhaseMade && p.Dropped == nil {
		if err = v.flow.Drop(ctx, stage.PlaceOptions{Repo: o.Repo, Place: id, Gate: o.Gate}); err != nil {
			return err
		}
	}
	env.FaultAt("rollback:dropped")
	if _, p, err = record.ReadPlace(ctx, store, id); err != nil {
		return err
	}
	if _, err := v.git.ResolveRef(ctx, p.BranchRef()); p.Phase == record.PhaseMade && err == nil {
		// (A rerun after tidy took the branch has nothing left to undo.)
		if err := v.undoChildWork(ctx, p); err != nil {
			return err
		}
	} else if err != nil && !errors.Is(err, git.ErrNotExist) {
		return err
	}
	env.FaultAt("rollback:undone")
	if !p.Parent.Restored {
		if err := v.restoreCommissioner(ctx, p); err != nil {
			return err
		}
	}
	env.FaultAt("rollback:restored")
	return nil
}

// undoChildWork moves a rolled-back place's branch and work tree back to
// its base, keeping what they held in a snapshot of its current stage, so
// tidy removes both and loses nothing.
func (v *Verbs) undoChildWork(ctx context.Context, p *record.Place) error {
	st := &p.Stages[p.Current]
	kept, err := v.git.Reset(ctx, p, st, p.Base, "", "rollback "+p.ID)
	if err != nil || kept == nil {
		return err
	}
	_, err = record.EditPlace(ctx, v.store, p.ID, func(cur *record.Place) (string, error) {
		s := &cur.Stages[cur.Current]
		s.Snapshots = append(s.Snapshots, *kept)
		return "roll back " + cur.ID + ": its work kept in " + kept.Ref, nil
	})
	return err
}

// restoreCommissioner puts the commissioner of rolled-back place p back as
// it was when it delegated: its branch at the head it delegated from and
// its work tree as it was then, dirty files too; what it replaces is kept
// in a snapshot of the commissioner's current stage.
func (v *Verbs) restoreCommissioner(ctx context.Context, p *record.Place) error {
	store := v.store
	d := p.Parent
	_, parent, err := record.ReadPlace(ctx, store, d.Parent)
	if err != nil {
		return err
	}
	if err := v.git.CheckHome(ctx, parent); err != nil {
		return err
	}
	tree := ""
	if d.Start != nil {
		tree = d.Start.Tree
	}
	kept, err := v.git.Reset(ctx, parent, &parent.Stages[parent.Current], p.Base, tree, "flume rollback --delegation "+p.ID)
	if err != nil {
		return err
	}
	if kept != nil {
		if _, err := record.EditPlace(ctx, store, parent.ID, func(cur *record.Place) (string, error) {
			s := &cur.Stages[cur.Current]
			s.Snapshots = append(s.Snapshots, *kept)
			return fmt.Sprintf("roll back %s: %s restored as it delegated; what was there kept in %s", p.ID, cur.ID, kept.Ref), nil
		}); err != nil {
			return err
		}
	}
	_, err = record.EditPlace(ctx, store, p.ID, func(cur *record.Place) (string, error) {
		cur.Parent.Restored = true
		return fmt.Sprintf("roll back %s: %s restored to %.12s", cur.ID, d.Parent, cur.Base), nil
	})
	return err
}

// checkCommissioner refuses a delegation verb on p unless p is a delegated
// place and the caller is its commissioner's agent or a person (no place
// of its own): a child never resolves itself, nor does another place.
func checkCommissioner(env *stage.Env, p *record.Place, verb string) error {
	if p.Parent == nil {
		return &stage.RefusedError{Place: p.ID, Reason: "it is not a delegated place; there is nothing to " + verb}
	}
	if from := stage.CallerPlace(env); from != "" && from != p.Parent.Parent {
		return &stage.RefusedError{Place: p.ID, Reason: fmt.Sprintf("only its commissioner %s (or a person) may %s it, not %s", p.Parent.Parent, verb, from)}
	}
	return nil
}
