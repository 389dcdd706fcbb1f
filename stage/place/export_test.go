package place

import (
	"context"

	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// MakePlace makes a place without starting its first stage's agent, for
// tests that need places but no agents; the product launches with
// Launch.
func MakePlace(ctx context.Context, env *stage.Env, repoDir string, opts LaunchOptions) (*record.Place, error) {
	r, err := env.OpenRepository(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	return makeLaunch(ctx, r, opts, false)
}

// In are the places' use cases in the repository containing repoDir, for
// tests that run one.
func In(ctx context.Context, env *stage.Env, repoDir string) (*Places, error) {
	r, err := env.OpenRepository(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	return New(r), nil
}

// StillMine reports whether a watcher (me) about to leave place id stays,
// for tests of the lease.
func StillMine(ctx context.Context, env *stage.Env, repoDir, id string, me *record.Proc) (bool, error) {
	r, err := env.OpenRepository(ctx, repoDir)
	if err != nil {
		return false, err
	}
	return stillMine(ctx, r, id, me), nil
}

// YieldToAdopter runs a runner's beat's look for a record that adopted
// place id (M5), for tests.
func YieldToAdopter(ctx context.Context, env *stage.Env, repoDir, id, remote string) error {
	r, err := env.OpenRepository(ctx, repoDir)
	if err != nil {
		return err
	}
	_, p, err := record.ReadPlace(ctx, r.Store, id)
	if err != nil {
		return err
	}
	return New(r).yieldToAdopter(ctx, p, remote)
}
