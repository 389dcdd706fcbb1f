// The use cases that start a stage and follow it: launch (L1), and every
// command that starts a stage again (advance, retry, go-on). The command
// layer only parses and prints.

package place

import (
	"context"
	"fmt"
	"slices"

	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/radar"
	"github.com/git-flume/git-flume/stage/record"
)

// Launch is launch's use case (L1): check that the first stage's agent can
// start here (preflight), make the place, start its kind's first stage and
// follow it. A place whose readying failed is returned with the
// error, its stage not started: it is made, and the caller shows it.
func (ps *Places) Launch(ctx context.Context, opts LaunchOptions) (*record.Place, error) {
	r := ps.r
	p, err := makeLaunch(ctx, r, opts, true)
	if p == nil || err != nil {
		return p, err
	}
	started, err := engine.Follow(ctx, r, p.ID)
	if started != nil {
		p = started
	}
	if p.Parent != nil {
		// its commissioner's notifier hears of it ([notify] export
		// writes its page, the child linked).
		if _, c, cerr := record.ReadPlace(ctx, r.Store, p.Parent.Parent); cerr == nil {
			engine.NotifyDelegated(ctx, r, c, p.ID)
		}
	}
	return p, err
}

// AdvanceOptions select what advance runs the engine of.
type AdvanceOptions struct {
	// Place is one place's id; "" is every place of the repository.
	Place string
	// FromHook is a run from a git hook, which runs inside an agent's
	// environment, not the launching caller's: it records what happened
	// and starts no agent and no watcher; the place's watcher starts the
	// next stage (A1).
	FromHook bool
	// Tidy tidies afterwards what landed (T1), as the post-merge hook asks.
	Tidy bool
	Gate stage.GateOptions
}

// Advanced is what advance did: each place as the engine left it, in
// order, and what tidy then did.
type Advanced struct {
	Places []*record.Place
	Tidied []TidyResult
}

// Advance is advance's use case: the engine of one place or of
// every place, each stage that starts followed until its prompt is
// confirmed (or it resolves otherwise), then, if asked, a tidy. What was
// done before an error is returned with it.
func (ps *Places) Advance(ctx context.Context, o AdvanceOptions) (*Advanced, error) {
	r, env := ps.r, ps.r.Env
	ids := []string{o.Place}
	if o.Place == "" {
		var err error
		if ids, err = openPlaceIDs(ctx, env, r.Store); err != nil {
			return nil, err
		}
	}
	follow, fr := engine.Follow, r
	if o.FromHook {
		follow, fr = engine.Confirm, r.With(func(e *stage.Env) { e.Engine.NoStart = true })
	}
	done := &Advanced{}
	for _, id := range ids {
		p, err := follow(ctx, fr, id)
		if err != nil {
			return done, fmt.Errorf("%s: %w", id, err)
		}
		done.Places = append(done.Places, p)
	}
	if o.FromHook && o.Place != "" {
		// a commit in a place is when its conflicts may change; the
		// radar's answers for its new head are computed now, queued in
		// the background, and a new conflict is told to the notifier.
		if err := radar.RefreshQueued(ctx, env, r.Dir, o.Place); err != nil {
			fmt.Fprintf(env.Out, "%v\n", err)
		}
	}
	if o.Tidy {
		// T1: flume tidies after a landing it observes; tidy itself
		// judges what landed and keeps everything else.
		var err error
		done.Tidied, err = ps.Tidy(ctx, TidyOptions{Gate: o.Gate})
		return done, err
	}
	return done, nil
}

// openPlaceIDs are this host's places not tidied, in id order: those the
// engine may move (another host's it never moves, R7). A record that
// cannot be read is status's to show.
func openPlaceIDs(ctx context.Context, env *stage.Env, store *refs.Store) ([]string, error) {
	records, _, err := store.List(ctx, record.PlacePrefix)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, p := range record.DecodePlaces(records) {
		if p.Phase != record.PhaseTidied && p.Host == env.Host {
			ids = append(ids, p.ID)
		}
	}
	slices.Sort(ids)
	return ids, nil
}
