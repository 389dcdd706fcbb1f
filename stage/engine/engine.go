package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/git/ondisk"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/toollog"
)

// reminder is the one message after a turn that ended with neither the
// stage's deliverable nor a need (A8).
func reminder(st *record.StageRecord) string {
	return "Your turn ended, but this stage's deliverable is not in git yet (" + DescribeDeliverable(st.Deliverable) +
		"). Finish it and commit, or end your turn with a line starting with NEEDS: saying what you need."
}

// Watched reports a stage the engine watches (run.Life.Watched).
func Watched(st *record.StageRecord) bool { return st.Observed(st.Base) }

// Confirm advances a place whose stage just started until its prompt is
// confirmed or the stage resolves otherwise (working, blocked,
// never-started, …): at most a window and a half after the second send.
// Slow is not failed: a stage still starting then is left to the watcher.
func Confirm(ctx context.Context, r *stage.Repository, id string) (*record.Place, error) {
	env := r.Env
	for {
		p, err := Advance(ctx, r, id)
		if err != nil {
			return p, err
		}
		st := p.Stages[p.Current]
		if (st.State != run.StateStarting && st.State != run.StateUnknown) || st.Agent == nil || st.Agent.Pane == "print" {
			return p, nil
		}
		// Each send gets its window and a half: a resend restarts it.
		if env.ClockNow().Sub(st.Agent.SentAt) > env.Engine.Window()*3/2 && st.Agent.Sends >= 2 {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Advance runs the place's stage engine until nothing more moves: start a
// pending stage, confirm its prompt, notice its deliverable, its need, its
// silence. Every move is a CAS write of the place record made from what was
// just read, so any process may run it, and one killed midway loses nothing:
// the next run reads where it stopped.
func Advance(ctx context.Context, r *stage.Repository, id string) (*record.Place, error) {
	env, repo, store := r.Env, r.Git, r.Store
	var p *record.Place
	for n := range maxMoves {
		moved := false
		// A move lost to another process is read and decided again, on
		// the one retry policy.
		err := refs.DefaultRetry.Retry(ctx, func(ctx context.Context) error {
			rec, cur, err := record.ReadPlace(ctx, store, id)
			if err != nil {
				return err
			}
			p = cur
			if n == 0 && p.Host == env.Host {
				if err := stage.TakeOwnObjects(ctx, repo, p.Path, p.ID); err != nil {
					return err
				}
				if err := stage.CheckHome(ctx, env, repo, p); err != nil {
					return err
				}
				// W4: the live log gets the tool calls the transcripts
				// show (startStage catches up again before it replaces an
				// agent). The record, not the log, is the truth: a log
				// that cannot be written stops nothing.
				_ = toollog.Append(ctx, repo.CommonDir, p)
			}
			moved, err = step(ctx, r, rec, p)
			return err
		})
		if err != nil || !moved {
			return p, err
		}
	}
	_, p, err := record.ReadPlace(ctx, store, id)
	return p, err
}

// maxMoves bounds the moves one Advance makes; a watcher's next tick goes
// on from there.
const maxMoves = 16

// step makes at most one move and reports whether it did: a pending stage
// is started; an active one is observed (observe), decided (decide, pure)
// and moved (run.Apply). A follow-up that cannot be typed now is decided
// once more without typing, as if it had not been proposed.
func step(ctx context.Context, r *stage.Repository, rec *refs.Record, p *record.Place) (bool, error) {
	env, repo, store := r.Env, r.Git, r.Store
	if p.Phase != record.PhaseMade || p.Host != env.Host || p.Current >= len(p.Stages) {
		return false, nil
	}
	if moved, err := stage.ReconcileReady(ctx, env, store, rec, p); moved || err != nil {
		return moved, err // a readying whose process died
	}
	st := &p.Stages[p.Current]
	if st.State == record.StagePending {
		if env.Engine.Pane == "none" || env.Engine.NoStart || startedByAnother(env, st) {
			return false, nil
		}
		i := p.Current
		moved, err := startStage(ctx, r, rec, p)
		if moved && p.Stages[i].State == run.StateBlocked {
			notify(ctx, r, p, i) // not ready (L2)
		}
		return moved, err
	}
	if !Watched(st) {
		return false, nil
	}
	seen, prompt, err := Observe(ctx, env, repo, p, st)
	if err != nil {
		return false, err
	}
	i, before, pol := p.Current, st.State, stagePolicy(env.Engine, p, st)
	for {
		q, mv := decide(p, seen, pol)
		var written *record.Place
		effects := run.Effects{
			Panes: env.Engine.RunPanes(st.Agent),
			Fault: env.FaultAt,
			Fresh: func(ctx context.Context) error { return fresh(ctx, repo, rec) },
			// A stage's end keeps what its agent left (W3).
			Keep: func(ctx context.Context, snapshot string) error {
				return keepSnapshot(ctx, repo, q, &q.Stages[i], snapshot)
			},
			Save: func(ctx context.Context, r run.Run, msg string) (bool, error) {
				w := clonePlace(q)
				w.Stages[i].SetRun(r)
				moved, err := writeStep(ctx, env, store, rec, w, &w.Stages[i], msg)
				if moved {
					written = w
				}
				return moved, err
			},
		}
		moved, untyped, err := run.Apply(ctx, st.Run(), q.Stages[i].Run(), mv, prompt, seen.Observation, pol, effects)
		if !untyped || seen.Busy {
			if written != nil && written.Stages[i].State != before {
				notify(ctx, r, written, i) // this process made the move: it tells, once
			}
			return moved, err
		}
		seen.Busy = true
	}
}

// startedByAnother reports a pending stage another live process on this
// host set pending to start itself (StageRecord.Starter). One that died
// before it started the stage left it to anyone.
func startedByAnother(env *stage.Env, st *record.StageRecord) bool {
	s := st.Starter
	return s != nil && s.Host == env.Host && s.PID != env.PID && s.Alive(env.Host)
}

// fresh fails with a conflict when rec's ref no longer points where it was
// read: the step is decided again from what is there now.
func fresh(ctx context.Context, repo *git.Repo, rec *refs.Record) error {
	now, err := repo.RefValue(ctx, rec.Ref)
	if err != nil {
		return err
	}
	if now != rec.Commit {
		return &refs.ConflictError{Conflicts: []git.RefConflict{{Name: rec.Ref, Expected: rec.Commit, Found: now}}}
	}
	return nil
}

// writeStep records one move of stage st and tells the pane host (herdr's
// sidebar) about it.
func writeStep(ctx context.Context, env *stage.Env, store *refs.Store, rec *refs.Record, p *record.Place, st *record.StageRecord, msg string) (bool, error) {
	_, err := record.SavePlace(ctx, store, rec, p, fmt.Sprintf("%s %s: %s", st.Name, p.ID, msg))
	if err == nil {
		report(ctx, env, p, st)
	}
	return err == nil, err
}

// Observe reads what decide needs of active stage st through the run
// lifecycle's one reading (run.Observe): the deliverable at one branch head
// (K6), read before the transcript, and whether the place is still its own
// worktree (A10). It also returns the stage's prompt.
func Observe(ctx context.Context, env *stage.Env, repo *git.Repo, p *record.Place, st *record.StageRecord) (StepSeen, string, error) {
	return observe(ctx, env, repo, p, st, false)
}

// Inspect is Observe as explain reads a stage: a run whose agent ended is
// read to its transcript's end too (run.Sources.Final).
func Inspect(ctx context.Context, env *stage.Env, repo *git.Repo, p *record.Place, st *record.StageRecord) (StepSeen, error) {
	seen, _, err := observe(ctx, env, repo, p, st, true)
	return seen, err
}

func observe(ctx context.Context, env *stage.Env, repo *git.Repo, p *record.Place, st *record.StageRecord, final bool) (StepSeen, string, error) {
	var seen StepSeen
	a := st.Agent
	src := run.Sources{
		Panes: env.Engine.RunPanes(a),
		Taken: takenTranscripts(p),
		Now:   env.ClockNow(),
		Deliverable: func(ctx context.Context) (bool, string, error) {
			head, err := repo.ResolveRef(ctx, p.BranchRef())
			if err != nil && !errors.Is(err, git.ErrNotExist) {
				return false, "", err
			}
			seen.Head = head
			done, what, tasks, err := deliverable(ctx, repo, p, st, head)
			seen.Tasks = tasks
			return done, what, err
		},
		Place:    func() string { return placeGone(ctx, repo, p) },
		Reminder: reminder(st),
		Final:    final,
	}
	if a != nil {
		src.Vars = agent.Vars{SessionID: a.Session, Place: p.Path, Home: agent.HomeOf(env.CallerEnv)}
	}
	o, prompt, err := run.Observe(ctx, st.Run(), src)
	seen.Observation = o
	return seen, prompt, err
}

// placeGone says why p's worktree is no longer the place an agent of it may
// run in (A10): the folder is gone, or is not a worktree of this repository
// on the place's branch, or the files that make it one were changed (A12);
// "" while it is.
func placeGone(ctx context.Context, repo *git.Repo, p *record.Place) string {
	if _, err := os.Stat(p.Path); errors.Is(err, os.ErrNotExist) {
		return fmt.Sprintf("its place's worktree %s is gone", p.Path)
	}
	// A12: the files that tie the worktree to the repository are the
	// agent's to write, and git run there follows them.
	if changed := repo.WorktreeChanged(p.Path); changed != "" {
		return gitFilesChanged + ", and git run in " + p.Path + " would follow them: " + changed
	}
	// A12: a place's agent may write its kind's ref folder, so a sibling
	// branch's file too, but not that branch's reflog.
	if head, err := repo.RefValue(ctx, p.BranchRef()); err == nil && head != "" {
		if known, has := ondisk.ReflogHas(repo.CommonDir, p.BranchRef(), head); known && !has {
			return fmt.Sprintf("%s: %s is at %.12s, a value git never gave it (its reflog has none such); another place's agent of kind %s can write it", branchWritten, p.Branch, head, p.PlaceKind)
		}
	}
	// A detached HEAD (a rebase under way) is still the place's.
	switch branch, err := repo.WorktreeBranch(p.Path); {
	case err != nil:
		return fmt.Sprintf("its place's folder %s is no longer a worktree of this repository", p.Path)
	case branch != "" && branch != p.BranchRef():
		return fmt.Sprintf("its place's worktree %s is on %s, not the place's branch %s", p.Path, strings.TrimPrefix(branch, "refs/heads/"), p.Branch)
	}
	return ""
}

// taskLine is compiled when first used: package inits run before every
// command, and most never read a task list.
var taskLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*(?:[-*+]|\d+\.)\s*\[([^\]]*)\]`) })
