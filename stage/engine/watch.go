package engine

import (
	"context"

	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// watchable reports whether a place has something for a watcher to do: an
// active stage whose agent flume started and has not recorded ended. An
// agent that went by itself is still watched until its end is recorded
// (A10): that is the watcher's to see.
func Watchable(ctx context.Context, env *stage.Env, p *record.Place) bool {
	return p.Host == env.Host && Kept(p)
}

// Kept reports whether p's host keeps a watcher on it, wherever that
// host is: its stage runs, or waits for the agent of the stage after a
// delivery. Another host's record that says so goes stale when its host
// falls silent (M4).
func Kept(p *record.Place) bool {
	if p.Phase != record.PhaseMade || p.Current >= len(p.Stages) {
		return false
	}
	st := p.Stages[p.Current]
	if st.State == record.StagePending && p.Current > 0 {
		return true // the stage after a delivery waits for its agent
	}
	return Watched(&st) && st.Agent != nil && !st.Agent.Ended
}

// LandedWork reports a place of this host whose last stage has landed:
// its work is over by T1, for tidy to judge.
func LandedWork(p *record.Place) bool {
	return p.Phase == record.PhaseMade && p.Current == len(p.Stages)-1 && p.Stages[p.Current].State == record.StateLanded
}

// NeedsWatcher reports whether a place has something to watch and no live
// watcher: then any command may start one.
func NeedsWatcher(ctx context.Context, env *stage.Env, p *record.Place) bool {
	if !Watchable(ctx, env, p) {
		return false
	}
	w := p.Watcher
	return w == nil || !w.Alive(env.Host)
}
