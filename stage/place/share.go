package place

import (
	"context"
	"fmt"

	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage/radar"
)

// Share syncs the repository's records with remote (R7), after bringing
// the fingerprints of this host's places up to date where their heads
// moved: what another host's conflict radar reads is what sync
// carries. A fingerprint that cannot be taken is told to env.Out; the
// records are shared as they are.
func (ps *Places) Share(ctx context.Context, remote string) (*refs.SyncReport, error) {
	env, store := ps.r.Env, ps.r.Store
	if err := radar.RefreshFingerprints(ctx, env, ps.r.Dir, false); err != nil {
		fmt.Fprintf(env.Out, "git-flume: %v (the records are shared as they are)\n", err)
	}
	return store.Sync(ctx, remote, env.Host)
}
