package stage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
)

// reconcileMaking finishes off a place whose launch stopped while making it
// (killed, or refused by git): its half-made worktree is removed, its branch
// deleted if it never moved from the base, and the record marked tidied, so
// the place is never left ambiguous and may be launched again. A launch
// still running (its process alive on this host) is left alone unless
// force (the caller is that launch).
//
// Nothing here can lose work: no agent runs in a place before it is made.
func reconcileMaking(ctx context.Context, env *Env, repo *git.Repo, store *refs.Store, rec *refs.Record, p *Place, checkAlive bool) (bool, error) {
	if p.Phase != PhaseMaking || p.Host != env.Host {
		return false, nil // only its own host can tell, and only it acts
	}
	if err := checkHome(ctx, env, repo, p); err != nil {
		return false, err
	}
	if checkAlive && p.Launcher != nil && refs.ProcessAlive(p.Launcher.Host, p.Launcher.PID, env.Host) {
		return false, nil
	}
	if p.Launcher != nil && p.Launcher.Host != env.Host {
		return false, nil // only its own host can tell
	}
	wts, err := repo.Worktrees(ctx)
	if err != nil {
		return false, err
	}
	for _, wt := range wts {
		// The path did not exist when the record was made (checked under
		// the launch lock), so a worktree there is this launch's own, on
		// its branch or still detached if `worktree add` was cut short.
		if wt.Path == p.Path && !wt.Main && (wt.Branch == p.branchRef() || wt.Branch == "") {
			if err := repo.RemoveWorktree(ctx, p.Path, true); err != nil {
				if err := forgetHalfMade(ctx, repo, p.Path); err != nil {
					return false, err
				}
			}
		}
	}
	// An interrupted `worktree add` may leave its folder before git knew
	// of it: remove it only if empty, never recursively.
	os.Remove(p.Path)
	if _, err := os.Lstat(p.Path); err != nil {
		repo.PruneWorktrees(ctx)
	}
	head, err := repo.ResolveRef(ctx, p.branchRef())
	switch {
	case err == nil && head == p.Base:
		if err := repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Delete, Name: p.branchRef(), Old: head}}); err != nil {
			return false, err
		}
	case err != nil && !errors.Is(err, git.ErrNotExist):
		return false, err
	}
	p.Phase, p.Launcher = PhaseTidied, nil
	p.Tidied = &TidyRecord{At: env.now(), Reason: "launch interrupted"}
	_, err = store.Write(ctx, []refs.Change{{Ref: rec.Ref, Old: rec, State: p, Message: fmt.Sprintf("launch %s: interrupted, cleaned up", p.ID)}})
	var conflict *refs.ConflictError
	if errors.As(err, &conflict) {
		return false, nil // someone else reconciled it
	}
	return err == nil, err
}

// forgetHalfMade handles a `worktree add` cut short before it wrote the
// worktree's .git file, which git then refuses to validate and remove: the
// half-written .git file and the then empty folder go (never recursively),
// and git forgets the worktree.
func forgetHalfMade(ctx context.Context, repo *git.Repo, path string) error {
	gitFile := filepath.Join(path, ".git")
	if info, err := os.Lstat(gitFile); err == nil && info.Mode().IsRegular() && info.Size() < 4096 {
		os.Remove(gitFile)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("interrupted launch left %s with files in it; remove it by hand: %w", path, err)
	}
	repo.UnlockWorktree(ctx, path)
	return repo.PruneWorktrees(ctx)
}

// reconcileReady marks a readying whose process died as interrupted.
func reconcileReady(ctx context.Context, env *Env, store *refs.Store, rec *refs.Record, p *Place) (*refs.Record, error) {
	r := p.Ready
	if p.Host != env.Host || r == nil || r.Running == nil || refs.ProcessAlive(r.Running.Host, r.Running.PID, env.Host) {
		return rec, nil
	}
	p.Ready = &ReadyResult{Steps: r.Steps, Exit: -1, Step: "(interrupted)", Tail: "readying was interrupted before it finished"}
	w, err := store.Write(ctx, []refs.Change{{Ref: rec.Ref, Old: rec, State: p, Message: "ready " + p.ID + ": interrupted"}})
	if err != nil {
		return nil, err
	}
	return w[0], nil
}
