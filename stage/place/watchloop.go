// The watcher (A7): one process per place keeps its stage's timers while
// the stage has something to watch, and tidies a place that landed.

package place

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/git-flume/git-flume/agents/broker"
	"github.com/git-flume/git-flume/internal/git/ondisk"
	"github.com/git-flume/git-flume/internal/wait"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/radar"
	"github.com/git-flume/git-flume/stage/record"
)

// watchErrors is how many steps in a row may fail before a watcher gives
// up (any command then starts another).
const watchErrors = 10

// Watch keeps a place's timers: it takes the place's watcher lease (or
// returns at once if a live watcher holds it), then advances the place
// every interval while it has something to watch. It never ends an agent
// on its own account (A7); it only runs the engine's steps. A detached
// watcher has no terminal: its place's log says when it took the lease,
// each step that failed, and why it left, a panic too.
func (ps *Places) Watch(ctx context.Context, id string, interval, lifetime time.Duration) error {
	me := ps.r.Env.Self()
	held, err := takeWatch(ctx, ps.r.Env, ps.r.Store, id, me)
	if held != nil || err != nil {
		return err
	}
	ps, closeLog := ps.logged(id, "watch")
	defer closeLog()
	out := ps.r.Env.Out
	fmt.Fprintf(out, "watching as pid %d\n", me.PID)
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(out, "left by a panic: %v\n%s", v, debug.Stack())
			panic(v)
		}
	}()
	why, err := ps.watch(ctx, id, me, interval, lifetime)
	if err != nil {
		why += ": " + err.Error()
	}
	fmt.Fprintf(out, "left: %s\n", why)
	return err
}

// watch is Watch's loop, with the lease taken; it returns why it left.
func (ps *Places) watch(ctx context.Context, id string, me *record.Proc, interval, lifetime time.Duration) (string, error) {
	r := ps.r
	env, repo := r.Env, r.Git
	deadline := time.Now().Add(lifetime)
	failed := 0
	var rw radar.Watch
	var beat beater
	defer beat.final(ctx, ps) // no beat follows a watcher's end
	var inbox *broker.Server  // the agent's inbox served (A12)
	defer func() { inbox.Close() }()
	for time.Now().Before(deadline) {
		p, err := engine.Advance(ctx, r, id)
		if err != nil {
			// A step that failed (a git or pane host call under load)
			// is tried again at the next tick: a watcher that left at
			// its first error left its place unwatched while its record
			// still named it. Only errors that go on end it.
			if failed++; failed >= watchErrors || ctx.Err() != nil {
				return fmt.Sprintf("%d steps in a row failed", failed), err
			}
			fmt.Fprintf(env.Out, "a step failed (tried again in %s): %v\n", interval, err)
			if err := wait.Until(ctx, interval, nil); err != nil {
				return "ended", err
			}
			continue
		}
		failed = 0
		if engine.LandedWork(p) {
			// T1: a landing the watcher saw (merged on the
			// forge and fetched, say) is tidied as the post-merge hook
			// tidies one, by T1–T4, keeping whatever they keep.
			_, err := ps.Tidy(ctx, TidyOptions{Place: id})
			return "its work landed, tidied", err
		}
		if p.Watcher == nil || *p.Watcher != *me {
			return "the lease is another's", nil
		}
		if !engine.Watchable(ctx, env, p) {
			beat.final(ctx, ps)
			if !stillMine(ctx, r, id, me) {
				return "nothing left to watch", nil
			}
			continue // moved on meanwhile (a retry): watched still
		}
		rw.Tick(ctx, env, repo, r.Dir, p)
		beat.tick(ctx, ps, p)
		inbox = serveInbox(ctx, env, p, inbox)
		if err := wait.Until(ctx, interval, watchedFiles(repo.CommonDir, p, inbox)); err != nil {
			return "ended", err
		}
	}
	return "its lifetime is over", nil
}

// logged is ps saying what it says to place id's live log too, each line
// stamped: a detached watcher has no terminal, and git flume log shows
// it. done closes the log.
func (ps *Places) logged(id, who string) (_ *Places, done func()) {
	log, err := stage.OpenLog(ps.r.Git.CommonDir, id)
	if err != nil {
		return ps, func() {}
	}
	return New(ps.r.With(func(e *stage.Env) { e.Out = io.MultiWriter(e.Out, stage.Stamped(log, who)) })), func() { log.Close() }
}

// watchedFiles are the files whose change ends a watcher's wait early:
// the agent's own hooks (A11), its branch's reflog (a sandboxed agent's
// commit starts no advance of its own, A12) and its inbox.
func watchedFiles(commonDir string, p *record.Place, inbox *broker.Server) []string {
	var files []string
	if a := record.CurrentRun(p); a != nil && a.EventsFile() != "" {
		files = append(files, a.EventsFile(), ondisk.ReflogPath(commonDir, p.BranchRef()))
	}
	if inbox != nil {
		files = append(files, inbox.Inbox())
	}
	return files
}

// takeWatch takes place id's watcher lease for me; held names the live
// watcher that holds it (then there is nothing for me to do), and is said
// in the place's log: a start that found the lease held leaves no other
// trace.
func takeWatch(ctx context.Context, env *stage.Env, store *refs.Store, id string, me *record.Proc) (held *record.Proc, err error) {
	errHeld := errors.New("held")
	_, err = record.EditPlace(ctx, store, id, func(p *record.Place) (string, error) {
		held = nil
		if err := stage.OwnedHere(env, p); err != nil {
			return "", err // R7: another host's record is never written here
		}
		if w := p.Watcher; w != nil && *w != *me && w.Alive(env.Host) {
			held = w
			return "", errHeld
		}
		p.Watcher = me
		return "watch " + id, nil
	})
	if errors.Is(err, errHeld) {
		if log, err := stage.OpenLog(store.Repo().CommonDir, id); err == nil {
			fmt.Fprintf(stage.Stamped(log, "watch"), "pid %d not watching: pid %d holds the lease\n", me.PID, held.PID)
			log.Close()
		}
		return held, nil
	}
	return nil, err
}

// stillMine decides, as place id's watcher is about to leave it after its
// last share, whether it stays (the lease names it and the place is
// watchable again: a retry meanwhile), and gives up the lease in the same
// CAS step when it leaves. A look and a leave apart let a retry between
// them see the watcher alive and start none: the place went unwatched
// where no command comes to start one (a runner's host, M4).
func stillMine(ctx context.Context, r *stage.Repository, id string, me *record.Proc) bool {
	stay := false
	_, err := record.EditPlace(ctx, r.Store, id, func(p *record.Place) (string, error) {
		stay = false
		if p.Watcher == nil || *p.Watcher != *me {
			return "", refs.ErrNoChange // another's lease, or none
		}
		if engine.Watchable(ctx, r.Env, p) {
			stay = true
			return "", refs.ErrNoChange
		}
		p.Watcher = nil
		return "unwatch " + id, nil
	})
	return err == nil && stay
}
