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
	rep, err := store.Sync(ctx, remote, env.Host)
	if err == nil {
		// Which places are other hosts', for a view of one place that
		// need not read every record (radar.PlaceConflicts); a list not
		// kept is only read around.
		if nerr := radar.NoteForeign(ctx, ps.r.Git, store, env.Host, rep); nerr != nil {
			fmt.Fprintf(env.Out, "git-flume: other hosts' places not noted: %v\n", nerr)
		}
	}
	return rep, err
}
