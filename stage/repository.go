package stage

import (
	"context"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
)

// Repository is the repository one command works in, opened once: git's
// repository, its store of records, and the command's Env (its host,
// clock and output). A use case takes it, or the narrow part of it it
// uses, rather than opening the repository from a path again.
type Repository struct {
	*Env
	Git   *git.Repo
	Store *refs.Store
}

// OpenRepository opens the repository containing dir and its store.
func (e *Env) OpenRepository(ctx context.Context, dir string) (*Repository, error) {
	repo, store, err := e.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	return &Repository{Env: e, Git: repo, Store: store}, nil
}
