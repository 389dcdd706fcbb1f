package stage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// repoLock serializes worktree and branch creation in one repository (L2b):
// git's own config and worktree bookkeeping race otherwise. It is an
// advisory flock on a file in the common git dir, so a killed holder never
// leaves it stale.
type repoLock struct{ f *os.File }

func lockRepo(ctx context.Context, commonDir string) (*repoLock, error) {
	path := filepath.Join(commonDir, "flume-launch.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open launch lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &repoLock{f: f}, nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, fmt.Errorf("take launch lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (l *repoLock) unlock() {
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}
