// Dropping a place (T1) and ending its agent before anything of it is
// removed (X5).

package place

import (
	"context"
	"errors"
	"fmt"
	"slices"

	agent "github.com/git-flume/git-flume/agents"
	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/words"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
)

// Drop marks a launch dropped (T1): its work is over without landing. The
// place's worktree and branch go at the next tidy, by the usual rules.
// A delegated place is dropped under its commissioner's delegation lock,
// and one whose delegation was closed meanwhile (accepted, rolled back)
// is not: that verb won, and only one of them says it succeeded (X5).
func (ps *Places) Drop(ctx context.Context, o stage.PlaceOptions) (*record.Place, error) {
	env, store := ps.r.Env, ps.r.Store
	unlock, err := lockCommissioner(ctx, store, o.Place)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return drop(ctx, env, store, o, true)
}

// DropHeld drops a delegated place as Drop does, for a verb that holds its
// commissioner's delegation lock and closed the delegation itself
// (rollback).
func (ps *Places) DropHeld(ctx context.Context, o stage.PlaceOptions) (*record.Place, error) {
	env, store := ps.r.Env, ps.r.Store
	return drop(ctx, env, store, o, false)
}

// drop marks place o.Place dropped; open says a delegation closed
// meanwhile is another verb's win.
func drop(ctx context.Context, env *stage.Env, store *refs.Store, o stage.PlaceOptions, open bool) (*record.Place, error) {
	id, gate := o.Place, o.Gate
	var p record.Place
	err := refs.DefaultRetry.Retry(ctx, func(ctx context.Context) error {
		rec, cur, err := record.ReadPlace(ctx, store, id)
		if err != nil {
			return err
		}
		p = *cur
		if err := stage.CheckHome(ctx, env, store.Repo(), &p); err != nil {
			return err
		}
		if d := p.Parent; open && d != nil && d.Outcome != "" {
			// accept or rollback closed it first.
			return &stage.LostError{Place: id, Verb: "drop", Outcome: d.Outcome}
		}
		if p.Phase == record.PhaseTidied {
			return fmt.Errorf("place %s was already tidied", id)
		}
		if p.Dropped != nil {
			return nil
		}
		cs, err := store.ReadClaim(ctx, id, env.Host)
		if err != nil {
			return err
		}
		if err := cs.Gate(id, gate.Session, gate.TakeOver); err != nil {
			return err
		}
		at := env.NowUTC()
		p.Dropped = &at
		msg := "drop " + id
		// X5: a dropped place's agent is ended now, verified gone; one
		// the operator started (print) is theirs to end, and tidy keeps
		// the place until it is gone.
		switch a := p.Stages[p.Current].Agent; {
		case a == nil || a.Ended:
			engine.EndStage(&p.Stages[p.Current], agentrun.StateCut, "the place was dropped", env.ClockNow())
		case endPlaceAgent(ctx, env, &p) == "":
			engine.EndStage(&p.Stages[p.Current], agentrun.StateCut, DroppedReason, env.ClockNow())
			msg += "; its agent ended and verified gone"
		}
		_, err = record.SavePlace(ctx, store, rec, &p, msg, cs.Verify(id))
		return err
	})
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// lockCommissioner takes the delegation lock of delegated place id's
// commissioner (stage.LockDelegations), so that a drop and its
// commissioner's accept or rollback run one after the other, each deciding
// from what the other left. A place not delegated has none.
func lockCommissioner(ctx context.Context, store *refs.Store, id string) (func(), error) {
	_, p, err := record.ReadPlace(ctx, store, id)
	if err != nil || p.Parent == nil {
		return func() {}, err
	}
	l, err := stage.LockDelegations(ctx, store.Repo().CommonDir, p.Parent.Parent)
	if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}

// DroppedReason is the reason of a stage whose agent drop ended.
const DroppedReason = "the place was dropped; its agent was ended"

// endPlaceAgent ends the current stage's agent of a place whose work is
// over and verifies it gone. It returns why the place must stay instead:
// the agent could not be ended, its pane is still up, or it runs in the
// operator's own terminal, which flume does not end.
func endPlaceAgent(ctx context.Context, env *stage.Env, p *record.Place) string {
	a := p.Stages[p.Current].Agent
	if a == nil || a.Ended {
		return ""
	}
	if a.Pane == "print" {
		if left := agent.SessionProcesses(a.Session); len(left) > 0 {
			return fmt.Sprintf("its agent, started by the operator from a printed command, still runs (pids %v); end it, then tidy again", left)
		}
		a.Ended = true
		return ""
	}
	if err := engine.EndAgent(ctx, env, a); err != nil {
		a.Ended = false
		return "its agent could not be ended: " + words.FirstLine(err.Error())
	}
	if env.Engine.Up(ctx, a) {
		a.Ended = false
		return fmt.Sprintf("its agent's pane %s is still up after it was ended", a.Pane)
	}
	return ""
}

// markAgentEnded records that the current stage's agent ended (tidy ended
// it and verified it gone), re-reading on a lost race.
func markAgentEnded(ctx context.Context, env *stage.Env, store *refs.Store, id string) (*refs.Record, error) {
	return record.EditPlace(ctx, store, id, func(p *record.Place) (string, error) {
		a := p.Stages[p.Current].Agent
		if a == nil || a.Ended {
			return "", refs.ErrNoChange
		}
		a.Ended = true
		engine.EndStage(&p.Stages[p.Current], agentrun.StateCut, "the place was tidied; its agent was ended", env.ClockNow())
		return fmt.Sprintf("tidy %s: its agent ended and verified gone", id), nil
	})
}

// TreeDrop is what DropTree did to one place of the tree.
type TreeDrop struct {
	Place *record.Place
	// Gone says the place's agent is verified gone (or never ran);
	// false for one the operator started (print), theirs to end.
	Gone bool
}

// DropTree drops a place and every place delegated from it, deepest first:
// a delegation tree is stopped in one step, each agent ended
// and verified gone (X5) before its commissioner's, every branch and worktree
// kept for tidy to judge. Only this host's places whose records name
// their commissioner are followed (R5): a child link is never taken on
// the parent's word alone.
func (ps *Places) DropTree(ctx context.Context, o stage.PlaceOptions) ([]TreeDrop, error) {
	env, store := ps.r.Env, ps.r.Store
	order, err := subtreeDeepestFirst(ctx, env, store, o.Place)
	if err != nil {
		return nil, err
	}
	var done []TreeDrop
	for _, id := range order {
		p, err := ps.Drop(ctx, stage.PlaceOptions{Repo: o.Repo, Place: id, Gate: o.Gate})
		if err != nil {
			return done, fmt.Errorf("%s: %w (the places before it in the list are dropped)", id, err)
		}
		a := p.Stages[p.Current].Agent
		done = append(done, TreeDrop{Place: p, Gone: a == nil || a.Ended})
	}
	return done, nil
}

// subtreeDeepestFirst lists root and the places delegated from it, each
// child before its commissioner, tidied places left out.
func subtreeDeepestFirst(ctx context.Context, env *stage.Env, store *refs.Store, root string) ([]string, error) {
	var order []string
	seen := map[string]bool{}
	var visit func(id, parent string, depth int) error
	visit = func(id, parent string, depth int) error {
		if seen[id] || depth > record.MaxTreeDepth {
			return nil
		}
		seen[id] = true
		_, p, err := record.ReadPlace(ctx, store, id)
		var nf *record.NotFoundError
		switch {
		case parent != "" && errors.As(err, &nf):
			return nil // a child removed since its commissioner named it
		case err != nil:
			return err
		case parent != "" && (p.Parent == nil || p.Parent.Parent != parent || p.Host != env.Host):
			return nil // not this commissioner's child, or not this host's
		}
		for _, child := range slices.Backward(p.Children) {
			if err := visit(child, id, depth+1); err != nil {
				return err
			}
		}
		if p.Phase != record.PhaseTidied {
			order = append(order, id)
		}
		return nil
	}
	if err := visit(root, "", 0); err != nil {
		return nil, err
	}
	return order, nil
}
