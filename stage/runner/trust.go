package runner

import (
	"context"
	"strings"

	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// runnerConfig (M1) is the configuration whose runner lines flume runs here,
// as the person (issue 61): the user's own file over .flume/config at the
// tip of target (the branch the main checkout is on when ""), never at a
// place's branch: that is an agent's, and its start or sshCommand line
// would run on this machine. A place's branch, or no branch, gives the
// user's own file alone.
func runnerConfig(ctx context.Context, r *stage.Repository, target string) (*stage.Config, error) {
	if target == "" {
		if main, err := r.Git.MainCheckout(ctx); err == nil {
			branch, _ := r.Git.WorktreeBranch(main)
			target = strings.TrimPrefix(branch, "refs/heads/")
		}
	}
	if target != "" && !placeBranch(ctx, r, target) {
		if _, err := r.Git.ResolveCommit(ctx, "refs/heads/"+target); err == nil {
			return r.Config(ctx, "refs/heads/"+target)
		}
	}
	return stage.LoadFiles(ctx, r.Runner, r.UserConfig)
}

// placeBranch reports whether branch is any place's, of any host.
func placeBranch(ctx context.Context, r *stage.Repository, branch string) bool {
	recs, _, err := r.Store.List(ctx, record.PlacePrefix)
	if err != nil {
		return true // unknown: trusted as little as a place's
	}
	for _, p := range record.DecodePlaces(recs) {
		if p.Branch == branch {
			return true
		}
	}
	return false
}
