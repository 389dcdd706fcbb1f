package place

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
)

// beater is a watcher's beat for a place this host runs for a runner
// (M4): when it last beat, and the clone's settings, read once.
type beater struct {
	last time.Time
	set  *stage.Settings
}

// tick beats for p when a beat has passed since the last: its work
// and this host's records shared with the remote. A beat that fails is
// told and tried again at the next; the place goes on regardless.
func (b *beater) tick(ctx context.Context, ps *Places, p *record.Place) {
	env := ps.r.Env
	if p.Runner == "" || p.Host != env.Host {
		return
	}
	if b.set == nil {
		set, err := stage.ReadSettings(ctx, env.Runner, ps.r.Dir)
		if err != nil {
			return
		}
		b.set = &set
	}
	now := time.Now()
	if !b.last.IsZero() && now.Sub(b.last) < b.set.Beat {
		return
	}
	b.last = now
	remote, err := stage.SyncRemote(ctx, env, ps.r.Dir, "", *b.set)
	if err == nil {
		err = ps.Beat(ctx, p, remote, b.set.Beat)
		// A beat whose push was refused may still have fetched the
		// record that adopts this place: looked for all the same.
		err = errors.Join(err, ps.yieldToAdopter(ctx, p, remote))
	}
	if err != nil {
		fmt.Fprintf(env.Out, "git-flume: %s: beat: %v (tried again in %s)\n", p.ID, err, b.set.Beat)
	}
}

// yieldToAdopter stops the agent of p, and of any other place of this
// host still at work, when another place's record, brought by the beat's
// sync, says it adopted that place (M5): this host was taken for lost and
// the work goes on there; two agents on one piece of work would race to
// land it. Any watcher of the host yields for all of them: the adopted
// place's own may be gone, and on a runner's host no command comes to
// start another. It also starts a watcher for each of this host's
// runner places that needs one, for the same reason.
func (ps *Places) yieldToAdopter(ctx context.Context, p *record.Place, remote string) error {
	env := ps.r.Env
	recs, _, err := ps.r.Store.List(ctx, record.PlacePrefix)
	if err != nil {
		return err
	}
	places := record.DecodePlaces(recs)
	adopter := map[string]*record.Place{} // by the place it adopts, of this host
	for _, q := range places {
		if a := q.Adopts; a != nil && a.Host == env.Host && a.Place != q.ID {
			adopter[a.Place] = q
		}
	}
	var errs error
	for _, o := range places {
		if o.Host != env.Host || o.Runner == "" || o.ID == p.ID {
			continue
		}
		if q := adopter[o.ID]; q != nil && engine.Kept(o) {
			errs = errors.Join(errs, ps.yield(ctx, o, q, remote))
		} else if q == nil && env.StartWatcher != nil && engine.NeedsWatcher(ctx, env, o) {
			fmt.Fprintf(env.Out, "git-flume: %s: no live watcher: one started\n", o.ID)
			env.StartWatcher(ps.r.Dir, o.ID)
		}
	}
	if q := adopter[p.ID]; q != nil && p.Host == env.Host {
		errs = errors.Join(errs, ps.yield(ctx, p, q, remote))
	}
	return errs
}

// yield stops place p's agent, adopted by q, and shares the stop.
func (ps *Places) yield(ctx context.Context, p, q *record.Place, remote string) error {
	a := q.Adopts
	err := engine.NewOperator(ps.r).Stop(ctx, stage.PlaceOptions{Repo: ps.r.Dir, Place: p.ID, Force: true, Gate: stage.GateOptions{TakeOver: true}})
	if refused := (*stage.RefusedError)(nil); errors.As(err, &refused) {
		// No agent up to stop (it ended, or its pane went, before the
		// adoption came): the stage yields all the same; refused, the
		// beat tried it again for ever and the stage stayed working.
		err = ps.blockAdopted(ctx, p.ID, q)
	}
	if err != nil {
		return fmt.Errorf("%s: adopted as %s on %s, and its agent here did not stop: %w", p.ID, q.ID, q.Host, err)
	}
	fmt.Fprintf(ps.r.Env.Out, "git-flume: %s: adopted as %s on %s (%s): its agent here stopped\n", p.ID, q.ID, q.Host, a.Why)
	_, err = ps.Share(ctx, remote)
	return err
}

// blockAdopted blocks place id's current stage, adopted by q, when it has
// no agent to stop: retry here starts it again if a person wants.
func (ps *Places) blockAdopted(ctx context.Context, id string, q *record.Place) error {
	store, env := ps.r.Store, ps.r.Env
	return refs.DefaultRetry.Retry(ctx, func(ctx context.Context) error {
		rec, p, err := record.ReadPlace(ctx, store, id)
		if err != nil || p.Current >= len(p.Stages) {
			return err
		}
		st := &p.Stages[p.Current]
		if st.State == run.StateBlocked && st.Block == run.BlockStopped {
			return nil
		}
		why := fmt.Sprintf("adopted as %s on %s: its work goes on there; git flume retry starts the stage here again", q.ID, q.Host)
		if st.State == record.StagePending {
			st.State = run.StateBlocked // its agent, due after a delivery, never starts here
		}
		engine.EndStage(st, run.StateBlocked, why, env.ClockNow())
		if st.State != run.StateBlocked {
			return nil // it had ended: nothing to yield
		}
		st.Block = run.BlockStopped
		_, err = record.SavePlace(ctx, store, rec, p, fmt.Sprintf("%s %s: adopted as %s on %s", st.Name, id, q.ID, q.Host))
		return err
	})
}

// final shares this host's records as a watcher leaves a runner's place
// that beat since it last shared: its last step reaches the remote.
func (b *beater) final(ctx context.Context, ps *Places) {
	if b.set == nil || b.last.IsZero() {
		return // not a runner's place, or it never beat
	}
	b.last = time.Time{} // shared: a beat follows at once if the watcher stays
	if remote, err := stage.SyncRemote(ctx, ps.r.Env, ps.r.Dir, "", *b.set); err == nil {
		_, _ = ps.Share(context.WithoutCancel(ctx), remote)
	}
}

// Beat shares what the host running place p for a runner knows (M4,
// M5): p's work pushed to remote under WorkPrefix, this host's record
// marked heard, and its records synced, so that another host shows p from
// them, and can adopt it from the work, without asking this one.
func (ps *Places) Beat(ctx context.Context, p *record.Place, remote string, beat time.Duration) error {
	env, store := ps.r.Env, ps.r.Store
	werr := pushWork(ctx, ps.r.Git, remote, p)
	if err := record.Heard(ctx, store, env.Host, env.ClockNow(), beat); err != nil {
		return errors.Join(werr, err)
	}
	_, err := ps.Share(ctx, remote)
	return errors.Join(werr, err)
}

// pushWork pushes p's work to remote as refs/flume-work/<place> when it
// changed since it was last pushed from here (the same ref in this
// clone): leased on that, and once more on what the remote holds when
// this clone had lost track of it.
func pushWork(ctx context.Context, repo *git.Repo, remote string, p *record.Place) error {
	if _, err := os.Stat(p.Path); err != nil {
		return nil // no worktree: nothing in progress to keep
	}
	head, err := repo.ResolveRef(ctx, p.BranchRef())
	if err != nil {
		return err
	}
	tree, err := repo.SnapshotTree(ctx, p.Path)
	if err != nil {
		return err
	}
	ref := record.WorkPrefix + p.ID
	last, _ := repo.ResolveRef(ctx, ref)
	if last != "" {
		lastTree, _ := repo.TreeOf(ctx, last)
		lastHead, _ := repo.ResolveCommit(ctx, last+"^1")
		if lastTree == tree && lastHead == head {
			return nil
		}
	}
	work, err := repo.CommitTreeWith(ctx, tree, "flume work of "+p.ID+", shared for adopt", head)
	if err != nil {
		return err
	}
	err = repo.PushLeased(ctx, remote, []git.PushUpdate{{Ref: ref, Local: work, Expect: last}})
	if errors.As(err, new(*git.PushRejectedError)) {
		// This clone's copy is not what the remote holds (a clone that
		// lost it, or a push whose answer was lost): take the remote's
		// and push over it, leased on it.
		if ferr := repo.FetchRefs(ctx, remote, false, "+"+ref+":"+ref); ferr != nil {
			return errors.Join(err, ferr)
		}
		last, _ = repo.ResolveRef(ctx, ref)
		err = repo.PushLeased(ctx, remote, []git.PushUpdate{{Ref: ref, Local: work, Expect: last}})
	}
	if err != nil {
		return fmt.Errorf("%s: its work to %s: %w", p.ID, remote, err)
	}
	op := git.Update
	if last == "" {
		op = git.Create
	}
	return repo.UpdateRefs(ctx, []git.RefUpdate{{Op: op, Name: ref, New: work, Old: last}})
}
