// The use cases that start a stage and follow it: launch (L1), and every
// command that starts a stage again (advance, retry, go-on). The command
// layer only parses and prints.

package stage

import "context"

// EnsureWatchers starts a watcher for each place of st that needs one (a
// stage that runs, no live watcher): env.StartWatcher runs it detached.
// With no StartWatcher none is started.
func EnsureWatchers(env *Env, repoDir string, st *Status) {
	if env.StartWatcher == nil || st == nil {
		return
	}
	for _, p := range st.Places {
		if p.NeedsWatcher {
			env.StartWatcher(repoDir, p.Place)
		}
	}
}

// Follow follows place id's stage that just started until its prompt is
// confirmed or it resolves otherwise (Confirm), then makes sure a watcher
// keeps its timers, even when following failed: the stage may still run.
func Follow(ctx context.Context, env *Env, repoDir, id string) (*Place, error) {
	p, err := Confirm(ctx, env, repoDir, id)
	EnsureWatcher(ctx, env, repoDir, id)
	return p, err
}

// EnsureWatcher starts place id's watcher if it needs one.
func EnsureWatcher(ctx context.Context, env *Env, repoDir, id string) {
	if env.StartWatcher == nil {
		return
	}
	if st, err := ReadStatus(ctx, env, StatusOptions{Repo: repoDir, Place: id}); err == nil {
		EnsureWatchers(env, repoDir, st)
	}
}

// Start is launch's use case (L1): make the place, start its kind's first
// stage and follow it. A place whose readying failed is returned with the
// error, its stage not started: it is made, and the caller shows it.
func Start(ctx context.Context, env *Env, opts LaunchOptions) (*Place, error) {
	p, err := Launch(ctx, env, opts)
	if p == nil || err != nil {
		return p, err
	}
	started, err := Follow(ctx, env, opts.Repo, p.ID)
	if started != nil {
		p = started
	}
	return p, err
}
