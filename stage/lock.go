package stage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/git-flume/git-flume/internal/lockfile"
)

// LockRepo serializes worktree and branch creation in one repository.
func LockRepo(ctx context.Context, commonDir string) (*lockfile.Lock, error) {
	l, err := lockfile.Take(ctx, filepath.Join(commonDir, lockfile.RepoName))
	if err != nil {
		return nil, fmt.Errorf("launch lock: %w", err)
	}
	return l, nil
}

// LockDelegations serializes the verbs on the delegations of one
// commissioner: accept, reopen, unblock and rollback of its
// children, and drop of one, run one at a time, each deciding
// from what the one before it left. The lock is a flock, so a verb killed
// while it holds it leaves nothing stale.
func LockDelegations(ctx context.Context, commonDir, commissioner string) (*lockfile.Lock, error) {
	dir := filepath.Join(commonDir, "flume", "locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l, err := lockfile.Take(ctx, filepath.Join(dir, "delegations-"+commissioner+".lock"))
	if err != nil {
		return nil, fmt.Errorf("delegations of %s: %w", commissioner, err)
	}
	return l, nil
}

// LostError is a verb on a delegated place that found its delegation
// already closed another way by another command (accepted, rolled back,
// dropped): it changed nothing.
type LostError struct {
	Place, Verb, Outcome string
}

func (e *LostError) Error() string {
	return fmt.Sprintf("%s: not %s: its delegation was already %s by another command, and nothing was changed", e.Place, verbed(e.Verb), e.Outcome)
}

func verbed(verb string) string {
	switch verb {
	case "accept":
		return "accepted"
	case "roll back":
		return "rolled back"
	case "drop":
		return "dropped"
	}
	return verb + "ed"
}
