package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// snapshotRef names a snapshot of a place's stage: one per stage, run and
// reason, never overwritten (a second of the same gets a number).
func snapshotRef(p *record.Place, st *record.StageRecord, why string, n int) string {
	name := fmt.Sprintf("%d-%s-%d-%s", p.Current+1, st.Name, st.Runs, why)
	if n > 1 {
		name += fmt.Sprintf("-%d", n)
	}
	return refs.SnapshotPrefix + p.ID + "/" + name
}

// TakeSnapshot keeps the place's work tree in git when it holds
// uncommitted changes (W3): the tree through a throwaway index (the real
// index and the branch untouched), a commit on the branch head at a
// create-only ref, and the patch from the stage's base into the place's
// log folder. It returns nil when the work tree is clean.
func TakeSnapshot(ctx context.Context, repo *git.Repo, p *record.Place, st *record.StageRecord, why string) (*record.Snapshot, error) {
	if _, err := os.Stat(p.Path); err != nil {
		return nil, nil
	}
	dirty, err := repo.Dirty(ctx, p.Path)
	if err != nil || len(dirty) == 0 {
		return nil, err
	}
	head, err := repo.ResolveRef(ctx, p.BranchRef())
	if err != nil {
		return nil, err
	}
	tree, err := repo.SnapshotTree(ctx, p.Path)
	if err != nil {
		return nil, err
	}
	commit, err := repo.CommitTreeWith(ctx, tree, fmt.Sprintf("flume snapshot %s: stage %s, %s", p.ID, st.Name, why), head)
	if err != nil {
		return nil, err
	}
	var ref string
	for n := 1; ; n++ {
		ref = snapshotRef(p, st, why, n)
		err = repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Create, Name: ref, New: commit}})
		if err == nil {
			break
		}
		if n == 20 {
			return nil, fmt.Errorf("snapshot %s: %w", ref, err)
		}
	}
	base := st.Base
	if base == "" {
		base = head
	}
	patch, err := repo.DiffTrees(ctx, base, commit)
	if err != nil {
		return nil, err
	}
	dir := stage.LogDir(repo.CommonDir, p.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	diff := filepath.Join(dir, filepath.Base(ref)+".diff")
	if err := os.WriteFile(diff, patch, 0o644); err != nil {
		return nil, err
	}
	return &record.Snapshot{Why: why, Ref: ref, Commit: commit, Tree: tree, Head: head, Diff: diff}, nil
}

// keepSnapshot snapshots a dirty work tree into the stage's record.
func keepSnapshot(ctx context.Context, repo *git.Repo, p *record.Place, st *record.StageRecord, why string) error {
	s, err := TakeSnapshot(ctx, repo, p, st, why)
	if err != nil || s == nil {
		return err
	}
	st.Snapshots = append(st.Snapshots, *s)
	return nil
}

// Rollback restores the place's work tree and branch to exactly their
// state when the current stage started (W5): the branch at the stage's
// base, the files as they were then, tracked, untracked and dirty alike.
// Nothing is lost: the state it replaces is kept first, in a snapshot (or,
// clean, a ref at the branch head). Refused on another session's claim,
// and, unless force, while the stage's agent runs.
func (op *Operator) Rollback(ctx context.Context, o stage.PlaceOptions) (*record.Place, *record.Snapshot, error) {
	env, repo, store := op.r.Env, op.r.Git, op.r.Store
	id, force, g := o.Place, o.Force, o.Gate
	rec, p, err := op.ReadGated(ctx, id, g)
	if err != nil {
		return nil, nil, err
	}
	if err := callerMay(ctx, env, store, p, "roll back"); err != nil {
		return nil, nil, err
	}
	st := &p.Stages[p.Current]
	if st.Base == "" {
		return nil, nil, &stage.RefusedError{Place: id, Reason: "stage " + st.Name + " has not started; nothing to roll back"}
	}
	if a := st.Agent; a != nil && !a.Ended {
		if env.Engine.Up(ctx, a) && !force {
			return nil, nil, &stage.RefusedError{Place: id, Reason: "its agent is still running; stop it first or pass --force"}
		}
		if err := EndAgent(ctx, env, a); err != nil {
			return nil, nil, err
		}
	}
	tree := ""
	if st.Start != nil {
		tree = st.Start.Tree
	}
	kept, err := ResetPlace(ctx, repo, p, st, st.Base, tree, "flume rollback "+id)
	if err != nil {
		return nil, nil, err
	}
	// The work tree is reset by now: what is left is to record it, over
	// whatever another process wrote meanwhile (a watcher seeing the
	// agent go, the radar taking a fingerprint), not failing on it.
	markRolledBack := func(cur *record.Place) {
		st := &cur.Stages[p.Current]
		if kept != nil && !slices.Contains(st.Snapshots, *kept) {
			st.Snapshots = append(st.Snapshots, *kept)
		}
		st.Blocked(agentrun.BlockRollback, "rolled back to the stage's start; retry starts it again")
	}
	markRolledBack(p)
	msg := fmt.Sprintf("%s %s: rolled back to %.12s", st.Name, id, st.Base)
	if _, err := record.SavePlace(ctx, store, rec, p, msg); err != nil {
		var conflict *refs.ConflictError
		if !errors.As(err, &conflict) {
			return nil, nil, err
		}
		if _, err := record.EditPlace(ctx, store, id, func(cur *record.Place) (string, error) {
			if cur.Current != p.Current {
				return "", fmt.Errorf("%s: its stage moved on while it was rolled back", id)
			}
			markRolledBack(cur)
			*p = *cur
			return msg, nil
		}); err != nil {
			return nil, nil, err
		}
	}
	return p, kept, nil
}

// ResetPlace moves place p's branch to commit to and its work tree to to
// with tree's files over it (W5): what it replaces is kept first, the
// dirty work tree in a snapshot of stage st, else commits beyond to at a
// ref of their own. It returns what it kept, nil when nothing needed
// keeping (already there, clean).
func ResetPlace(ctx context.Context, repo *git.Repo, p *record.Place, st *record.StageRecord, to, tree, reflog string) (*record.Snapshot, error) {
	head, err := repo.ResolveRef(ctx, p.BranchRef())
	if err != nil {
		return nil, err
	}
	kept, err := TakeSnapshot(ctx, repo, p, st, "rollback")
	if err != nil {
		return nil, err
	}
	if kept == nil && head != to {
		// Clean, but with commits beyond: keep them reachable.
		for n := 1; ; n++ {
			ref := snapshotRef(p, st, "rollback", n)
			err := repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Create, Name: ref, New: head}})
			if err == nil {
				kept = &record.Snapshot{Why: "rollback", Ref: ref, Commit: head, Head: head}
				break
			}
			if n == 20 {
				return nil, err
			}
		}
	}
	if head != to {
		if err := repo.UpdateRefsLogged(ctx, reflog, []git.RefUpdate{{Op: git.Update, Name: p.BranchRef(), New: to, Old: head}}); err != nil {
			return nil, err
		}
	}
	if kept == nil && tree == "" {
		return nil, nil // clean at to already
	}
	return kept, repo.RestoreTree(ctx, p.Path, to, tree)
}

// callerMay refuses verb on place p when an agent runs it for another
// place (A13): an agent acts on its own place and the places it
// delegated, and theirs, never on a stranger's, claimed or not. A
// person's shell (no caller place) may act on any.
func callerMay(ctx context.Context, env *stage.Env, store *refs.Store, p *record.Place, verb string) error {
	from := stage.CallerPlace(env)
	if from == "" || from == p.ID {
		return nil
	}
	cur := p
	for range maxAncestors {
		if cur.Parent == nil {
			break
		}
		if cur.Parent.Parent == from {
			return nil
		}
		_, next, err := record.ReadPlace(ctx, store, cur.Parent.Parent)
		if err != nil {
			break
		}
		cur = next
	}
	return &stage.RefusedError{Place: p.ID, Reason: fmt.Sprintf("the agent of %s may %s only its own place and the places it delegated", from, verb)}
}

// maxAncestors bounds the walk up a place's commissioners: records are
// hostile input (R5), and a cycle among them never ends it.
const maxAncestors = 64
