package stage

import "context"

// MakePlace makes a place without starting its first stage's agent, for
// tests that need places but no agents; the product launches with
// LaunchPlace.
func MakePlace(ctx context.Context, env *Env, opts LaunchOptions) (*Place, error) {
	return launch(ctx, env, opts, false)
}
