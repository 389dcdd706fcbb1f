package place

import (
	"context"
	"os"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/git/ondisk"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
)

// Places are the places' use cases for one command, in its repository
// opened once (stage.Repository): launch, advance, tidy, drop, the
// claims, share, the hooks and the watcher. The engine's steps they run
// take the same repository.
type Places struct {
	r  *stage.Repository
	wt worktrees
}

// New are the places' use cases in repository r.
func New(r *stage.Repository) *Places {
	return &Places{r: r, wt: repoWorktrees{env: r.Env, repo: r.Git}}
}

// worktrees are the git acts tidy makes on places' worktrees and
// branches, as narrow as it uses them: repoWorktrees makes them on the
// repository; a test gives its own, with a store in memory.
type worktrees interface {
	// Lock takes the repository's tidy and launch lock (L2b).
	Lock(ctx context.Context) (unlock func(), err error)
	// List lists the repository's worktrees, repairing what a dead
	// launch left half made when git cannot list them.
	List(ctx context.Context, records []*refs.Record) ([]git.Worktree, error)
	// CheckHome refuses a place whose record does not live here.
	CheckHome(ctx context.Context, p *record.Place) error
	// JudgeLanding reads the place's branch once and judges it (T1).
	JudgeLanding(ctx context.Context, p *record.Place) (engine.LandingJudgement, error)
	// Changed says which of git's files tying a worktree to the
	// repository were changed (A12), or "".
	Changed(path string) string
	// Dirty lists a worktree's uncommitted and untracked files.
	Dirty(ctx context.Context, path string) ([]string, error)
	// Remove is `git worktree remove` without force; RemoveWithSteps runs
	// the repository's remove steps first (T3) and says why it kept the
	// worktree, or "".
	Remove(ctx context.Context, path string) error
	RemoveWithSteps(ctx context.Context, p *record.Place) (kept string, err error)
	// DeleteBranch deletes ref by compare-and-swap on old (T4).
	DeleteBranch(ctx context.Context, ref, old string) error
}

// repoWorktrees are the worktrees' git acts on the repository.
type repoWorktrees struct {
	env  *stage.Env
	repo *git.Repo
}

func (w repoWorktrees) Lock(ctx context.Context) (func(), error) {
	l, err := stage.LockRepo(ctx, w.repo.CommonDir)
	if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}

func (w repoWorktrees) List(ctx context.Context, records []*refs.Record) ([]git.Worktree, error) {
	return ListWorktrees(ctx, w.env, w.repo, records)
}

func (w repoWorktrees) CheckHome(ctx context.Context, p *record.Place) error {
	return stage.CheckHome(ctx, w.env, w.repo, p)
}

func (w repoWorktrees) JudgeLanding(ctx context.Context, p *record.Place) (engine.LandingJudgement, error) {
	return engine.JudgeLanding(ctx, w.repo, p)
}

func (w repoWorktrees) Changed(path string) string { return w.repo.WorktreeChanged(path) }

func (w repoWorktrees) Dirty(ctx context.Context, path string) ([]string, error) {
	return w.repo.Dirty(ctx, path)
}

func (w repoWorktrees) Remove(ctx context.Context, path string) error {
	return removeTree(ctx, w.repo, path, "")
}

// removeTree removes the worktree at path (place id's, "" where not
// known) with git: what its agent wrote in its own object folder is taken
// into the shared store first, and the folder goes after (A13). Where
// the objects cannot be taken in, nothing is removed.
func removeTree(ctx context.Context, repo *git.Repo, path, id string) error {
	admin := ondisk.WorktreeAdmin(repo.CommonDir, path)
	if err := stage.TakeOwnObjects(ctx, repo, path, id); err != nil {
		return err
	}
	if err := repo.RemoveWorktree(ctx, path, false); err != nil {
		return err
	}
	if admin != "" {
		_ = os.RemoveAll(ondisk.OwnObjects(repo.CommonDir, admin))
	}
	return nil
}

func (w repoWorktrees) DeleteBranch(ctx context.Context, ref, old string) error {
	return w.repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Delete, Name: ref, Old: old}})
}
