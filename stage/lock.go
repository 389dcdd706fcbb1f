package stage

import (
	"context"
	"fmt"
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
