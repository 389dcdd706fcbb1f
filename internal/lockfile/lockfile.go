package lockfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// ErrBusy is a lock another process holds, from TryTake.
var ErrBusy = errors.New("held by another process")

// Lock is a held lock.
type Lock struct{ f *os.File }

// Take waits for the lock on path (created if missing) until ctx ends.
func Take(ctx context.Context, path string) (*Lock, error) {
	for {
		l, err := TryTake(path)
		if !errors.Is(err, ErrBusy) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TryTake takes the lock on path if no one holds it, else returns an error
// wrapping ErrBusy.
func TryTake(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	switch err {
	case nil:
		return &Lock{f: f}, nil
	case syscall.EWOULDBLOCK:
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, ErrBusy)
	default:
		f.Close()
		return nil, fmt.Errorf("take lock %s: %w", path, err)
	}
}

// Unlock releases the lock.
func (l *Lock) Unlock() {
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}

// RepoName is the file in a repository's common git dir whose lock
// serializes worktree and branch creation there (L2b): git's own config and
// worktree bookkeeping race otherwise. Places and workspaces both take it.
const RepoName = "flume-launch.lock"
