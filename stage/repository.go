package stage

import (
	"context"
	"sync"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
)

// Repository is the repository one command works in, opened once: git's
// repository, its store of records, and the command's Env (its host,
// clock and output). A use case takes it, or the narrow part of it it
// uses, rather than opening the repository from a path again.
type Repository struct {
	*Env
	// Dir is the directory the command named it by (its --repo, "" for
	// the working directory), as the processes it starts are told.
	Dir   string
	Git   *git.Repo
	Store *refs.Store

	// configs are .flume/config with the user's over it, by revision
	// (Config); shared by the copies With makes.
	configs *configs
}

type configs struct {
	mu    sync.Mutex
	byRev map[string]*Config
}

// OpenRepository opens the repository containing dir and its store.
func (e *Env) OpenRepository(ctx context.Context, dir string) (*Repository, error) {
	repo, store, err := e.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	return &Repository{Env: e, Dir: dir, Git: repo, Store: store, configs: &configs{}}, nil
}

// With is r with an Env changed by edit, r's own left as it is.
func (r *Repository) With(edit func(*Env)) *Repository {
	env := *r.Env
	edit(&env)
	out := *r
	out.Env = &env
	return &out
}

// Config is the repository's .flume/config at rev (a commit id: a
// place's base) with the user's flume config over it, read once per
// revision for the command.
func (r *Repository) Config(ctx context.Context, rev string) (*Config, error) {
	if r.configs == nil {
		return LoadConfig(ctx, r.Runner, r.Git, rev, r.UserConfig)
	}
	r.configs.mu.Lock()
	defer r.configs.mu.Unlock()
	if cfg, ok := r.configs.byRev[rev]; ok {
		return cfg, nil
	}
	cfg, err := LoadConfig(ctx, r.Runner, r.Git, rev, r.UserConfig)
	if err != nil {
		return nil, err
	}
	if r.configs.byRev == nil {
		r.configs.byRev = map[string]*Config{}
	}
	r.configs.byRev[rev] = cfg
	return cfg, nil
}
