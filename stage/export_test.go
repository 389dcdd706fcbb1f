package stage

import "context"

// Launch makes a place without starting its first stage's agent, for tests
// that need places but no agents; the product launches with Start.
func Launch(ctx context.Context, env *Env, opts LaunchOptions) (*Place, error) {
	return launch(ctx, env, opts, false)
}
