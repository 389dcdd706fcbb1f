// A launch cut short while it made its place is settled: finished where
// its worktree holds work, undone otherwise (L1).

package place

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// ReconcileMaking finishes off a place whose launch stopped while making it
// (killed, hung up, or refused by git), so the place is never left
// ambiguous. A worktree that git finished making and that already holds
// work (a commit on its branch, or any file that is not its base's) is
// the place: the record becomes "made" and nothing is removed. Otherwise
// the half-made worktree is removed, its branch deleted if it never moved
// from the base, and the record marked tidied, so the place may be launched
// again. A launch still running (its process alive on this host) is left
// alone unless force (the caller is that launch).
func ReconcileMaking(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, rec *refs.Record, p *record.Place, checkAlive bool) (bool, error) {
	if p.Phase != record.PhaseMaking || p.Host != env.Host {
		return false, nil // only its own host can tell, and only it acts
	}
	if err := stage.CheckHome(ctx, env, repo, p); err != nil {
		return false, err
	}
	if checkAlive && p.Launcher != nil && p.Launcher.Alive(env.Host) {
		return false, nil
	}
	if p.Launcher != nil && p.Launcher.Host != env.Host {
		return false, nil // only its own host can tell
	}
	repairHalfMadeAdmin(repo, p)
	work, err := removeHalfMade(ctx, repo, p)
	switch {
	case err != nil:
		return false, err
	case work != "":
		return finishMade(ctx, env, store, rec, p, work)
	}
	return undoLaunch(ctx, env, repo, store, rec, p)
}

// removeHalfMade removes what an interrupted launch of p made of its
// worktree, unless it holds work: then it removes nothing and says what
// work (the place is made after all).
func removeHalfMade(ctx context.Context, repo *git.Repo, p *record.Place) (work string, err error) {
	wts, err := repo.Worktrees(ctx)
	if err != nil {
		return "", err
	}
	listed := false
	for _, wt := range wts {
		listed = listed || wt.Path == p.Path
		// The path did not exist when the record was made (checked under
		// the launch lock), so a worktree there is this launch's own, on
		// its branch or still detached if `worktree add` was cut short.
		if wt.Path == p.Path && !wt.Main && (wt.Branch == p.BranchRef() || wt.Branch == "") {
			work, err := holdsWork(ctx, repo, p, wt)
			if err != nil {
				return "", fmt.Errorf("cannot tell whether the interrupted launch's worktree %s holds work, so it stays: %w", p.Path, err)
			}
			if work != "" {
				return work, nil
			}
			// Nothing in it is anyone's work: the force only passes git's
			// "initializing" lock and a checkout cut short.
			if err := repo.RemoveWorktree(ctx, p.Path, true); err != nil {
				if err := forgetHalfMade(ctx, repo, p.Path); err != nil {
					return "", err
				}
			}
		}
	}
	// An interrupted `worktree add` may leave its folder before git knew
	// of it, holding at most the .git file it was writing (even empty):
	// remove that file and the folder only if nothing else is there,
	// never recursively, and never of a worktree git lists (one made from
	// an empty tree holds nothing but its .git file).
	if entries, err := os.ReadDir(p.Path); err == nil && !listed && len(entries) == 1 && entries[0].Name() == ".git" {
		if info, err := entries[0].Info(); err == nil && info.Mode().IsRegular() && info.Size() < 4096 {
			os.Remove(filepath.Join(p.Path, ".git"))
		}
	}
	os.Remove(p.Path)
	if _, err := os.Lstat(p.Path); err != nil {
		return "", repo.PruneWorktrees(ctx)
	}
	return "", nil
}

// undoLaunch ends an interrupted launch whose worktree is gone: its branch
// is deleted if it never moved from the base (which the record then holds,
// X2), and the record says tidied. A record moved meanwhile was settled by
// another.
func undoLaunch(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, rec *refs.Record, p *record.Place) (bool, error) {
	head, err := repo.ResolveRef(ctx, p.BranchRef())
	var hold []string
	switch {
	case err == nil && head == p.Base:
		if err := repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Delete, Name: p.BranchRef(), Old: head}}); err != nil {
			return false, err
		}
		// X2: the base (record input, maybe a commit only the branch
		// held) stays reachable from the record.
		hold = []string{head}
	case err != nil && !errors.Is(err, git.ErrNotExist):
		return false, err
	}
	p.Phase, p.Launcher = record.PhaseTidied, nil
	p.Tidied = &record.TidyRecord{At: env.NowUTC(), Reason: "launch interrupted"}
	ch := record.PlaceChange(rec, p, fmt.Sprintf("launch %s: interrupted, cleaned up", p.ID))
	ch.Hold = hold
	_, err = store.Write(ctx, []refs.Change{ch})
	var conflict *refs.ConflictError
	if errors.As(err, &conflict) {
		return false, nil // someone else reconciled it
	}
	return err == nil, err
}

// holdsWork says what work a worktree left by an interrupted launch holds:
// commits on the place's branch beyond its base, or files that are not
// the base's (untracked or changed, read through a throwaway index). ""
// means none: removing it loses nothing.
func holdsWork(ctx context.Context, repo *git.Repo, p *record.Place, wt git.Worktree) (string, error) {
	head, err := repo.ResolveRef(ctx, p.BranchRef())
	if err == nil && head != p.Base {
		return fmt.Sprintf("its branch %s moved to %.12s", p.Branch, head), nil
	}
	if err != nil && !errors.Is(err, git.ErrNotExist) {
		return "", err
	}
	if wt.Branch == "" {
		// git was cut short before the branch was checked out: nobody
		// was handed the worktree yet.
		return "", nil
	}
	// git was cut short in the middle of the checkout: its index lacks
	// files and what differs is git's own writes, whole or torn. Nobody
	// was handed it; a torn file is not work.
	if cut, err := repo.CheckoutCutShort(ctx, p.Path, p.Base); err != nil || cut {
		return "", err
	}
	added, err := repo.FilesBeyond(ctx, p.Path, p.Base)
	if err != nil || !added {
		return "", err
	}
	return "it holds files that are not its base's", nil
}

// finishMade takes an interrupted launch's worktree that holds work as the
// place it was meant to be: its record moves to "made", and its first
// stage starts as any pending stage does.
func finishMade(ctx context.Context, env *stage.Env, store *refs.Store, rec *refs.Record, p *record.Place, why string) (bool, error) {
	p.Phase, p.Launcher = record.PhaseMade, nil
	_, err := record.SavePlace(ctx, store, rec, p, fmt.Sprintf("launch %s: interrupted after its worktree was made; %s, so it is kept as made", p.ID, why))
	var conflict *refs.ConflictError
	if errors.As(err, &conflict) {
		return false, nil // someone else reconciled it
	}
	return false, err
}

// repairHalfMadeAdmin clears what a `git worktree add` killed between
// writing its administrative folder's gitdir file and its commondir file
// leaves in the repository's worktrees/ folder: git itself then fails
// every `git worktree list` ("failed to read …/commondir") and, the folder
// being locked "initializing", never prunes it. Only the folder whose
// gitdir names this place's path is touched, only when its commondir is
// missing or empty, and of the place's own folder only the .git file that
// named it. Killed before gitdir, it leaves a folder named as the place's
// own folder holding only its lock, which git neither lists nor prunes and which
// would make the next launch's worktree take another id: that goes too
// (forgetLockedOnly).
func repairHalfMadeAdmin(repo *git.Repo, p *record.Place) {
	forgetLockedOnly(filepath.Join(repo.CommonDir, "worktrees", filepath.Base(p.Path)))
	dirs, _ := filepath.Glob(filepath.Join(repo.CommonDir, "worktrees", "*"))
	for _, dir := range dirs {
		gitdir, err := os.ReadFile(filepath.Join(dir, "gitdir"))
		if err != nil || filepath.Clean(strings.TrimSpace(string(gitdir))) != filepath.Join(p.Path, ".git") {
			continue
		}
		if info, err := os.Lstat(filepath.Join(dir, "commondir")); err == nil && info.Size() > 0 {
			continue
		}
		for _, name := range []string{"locked", "gitdir", "commondir", "HEAD", "HEAD.lock", "ORIG_HEAD", "index"} {
			os.Remove(filepath.Join(dir, name))
		}
		os.Remove(dir) // never recursively: anything else in it stays
		// The place's .git file named that folder; the folder it sits in
		// goes only if nothing else is in it (ReconcileMaking).
		dotgit := filepath.Join(p.Path, ".git")
		if data, err := os.ReadFile(dotgit); err == nil && len(data) < 4096 && strings.TrimSpace(strings.TrimPrefix(string(data), "gitdir:")) == dir {
			os.Remove(dotgit)
		}
	}
}

// forgetLockedOnly removes admin, a worktree's administrative folder,
// when all it holds is git's "initializing" lock: what a `git worktree
// add` (or flume writing a worktree's files) killed before its gitdir
// file leaves (L1: the same launch then gets its folder's name back).
func forgetLockedOnly(admin string) {
	entries, err := os.ReadDir(admin)
	if err != nil || len(entries) != 1 || entries[0].Name() != "locked" {
		return
	}
	lock := filepath.Join(admin, "locked")
	if reason, err := os.ReadFile(lock); err == nil && strings.TrimSpace(string(reason)) == "initializing" {
		os.Remove(lock)
		os.Remove(admin)
	}
}

// ListWorktrees lists the repository's worktrees; when git cannot (an
// interrupted launch left a half-written administrative folder), it repairs
// what this host's dead launches left and lists again.
func ListWorktrees(ctx context.Context, env *stage.Env, repo *git.Repo, records []*refs.Record) ([]git.Worktree, error) {
	wts, err := repo.Worktrees(ctx)
	if err == nil {
		return wts, nil
	}
	RepairDeadLaunches(ctx, env, repo, records)
	return repo.Worktrees(ctx)
}

// RepairDeadLaunches clears the half-written administrative folders this
// host's dead launches among records left (repairHalfMadeAdmin), which
// make git fail every worktree command (L1).
func RepairDeadLaunches(ctx context.Context, env *stage.Env, repo *git.Repo, records []*refs.Record) {
	for _, rec := range records {
		if !strings.HasPrefix(rec.Ref, record.PlacePrefix) {
			continue
		}
		p, err := record.DecodePlace(rec)
		if err != nil || p.Phase != record.PhaseMaking || p.Host != env.Host {
			continue
		}
		if p.Launcher != nil && p.Launcher.Alive(env.Host) {
			continue
		}
		if stage.CheckHome(ctx, env, repo, p) == nil {
			repairHalfMadeAdmin(repo, p)
		}
	}
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
	// A worktree git never locked cannot be unlocked; prune says whether
	// git forgot it.
	_ = repo.UnlockWorktree(ctx, path)
	return repo.PruneWorktrees(ctx)
}
