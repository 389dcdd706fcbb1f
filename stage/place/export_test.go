package place

import (
	"context"

	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// MakePlace makes a place without starting its first stage's agent, for
// tests that need places but no agents; the product launches with
// Launch.
func MakePlace(ctx context.Context, env *stage.Env, opts LaunchOptions) (*record.Place, error) {
	return makeLaunch(ctx, env, opts, false)
}
