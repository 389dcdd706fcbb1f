package engine

import (
	"context"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// Operator is the operator's verbs on a place's running stage (tell,
// stop, retry, go-on, attach, rollback) for one command, in its
// repository opened once (stage.Repository). The check its gate makes
// against git, that a record lives here, is a narrow interface: a test
// gives it a store in memory, a pane host of its own and a home that
// agrees, and starts no git for a verb refused before anything is typed
// or ended.
type Operator struct {
	r    *stage.Repository
	home home
}

// home refuses a place whose record does not live here (stage.CheckHome).
type home interface {
	CheckHome(ctx context.Context, p *record.Place) error
}

// NewOperator is the operator's verbs in repository r.
func NewOperator(r *stage.Repository) *Operator {
	return &Operator{r: r, home: repoHome{env: r.Env, repo: r.Git}}
}

// repoHome is the home check as the repository answers it.
type repoHome struct {
	env  *stage.Env
	repo *git.Repo
}

func (h repoHome) CheckHome(ctx context.Context, p *record.Place) error {
	return stage.CheckHome(ctx, h.env, h.repo, p)
}
