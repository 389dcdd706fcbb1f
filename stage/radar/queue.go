package radar

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/git-flume/git-flume/internal/lockfile"
	"github.com/git-flume/git-flume/stage"
)

// RefreshQueued is RefreshConflicts as a commit's hook asks for it: the
// place is queued (a file named by it in the cache's refresh folder), and
// at most refreshers processes of the repository at a time refresh what
// is queued, each place once however many commits queued it meanwhile. A
// run that finds every refresher's lock held leaves its place to them and
// ends. Two hundred places committing at once started two hundred
// refreshes side by side, each merging its place with every other (issue
// 46); queued, as many run as there are cores (four at most), each on
// the places' latest heads.
//
// A place queued while the refresher looks for the last time is seen: its
// run wrote the file before it tried the lock, and the refresher looks
// again after it lets the lock go. A refresher killed leaves the queue to
// the next commit's run.
func RefreshQueued(ctx context.Context, env *stage.Env, repoDir, id string) error {
	repo, _, err := env.Open(ctx, repoDir)
	if err != nil {
		return err
	}
	dir := filepath.Join(repo.CommonDir, "flume", "cache", "refresh")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, id), nil, 0o644); err != nil {
		return err
	}
	var errs []error
	for queued(dir) {
		lock, err := refresher(dir)
		if errors.Is(err, lockfile.ErrBusy) {
			break // those refreshing take what is queued
		} else if err != nil {
			return err
		}
		for _, p := range queuedPlaces(dir) {
			if os.Remove(filepath.Join(dir, p)) != nil {
				continue // another refresher took it
			}
			if _, err := RefreshConflicts(ctx, env, repoDir, p); err != nil {
				errs = append(errs, fmt.Errorf("conflicts of %s: %w", p, err))
			}
		}
		lock.Unlock()
	}
	return errors.Join(errs...)
}

// refreshers bounds the processes refreshing a repository's queue.
var refreshers = min(runtime.NumCPU(), 4)

// refresher takes one of the refreshers' locks, or says ErrBusy.
func refresher(dir string) (*lockfile.Lock, error) {
	for i := range refreshers {
		lock, err := lockfile.TryTake(filepath.Join(dir, ".lock-"+strconv.Itoa(i)))
		if !errors.Is(err, lockfile.ErrBusy) {
			return lock, err
		}
	}
	return nil, lockfile.ErrBusy
}

func queued(dir string) bool { return len(queuedPlaces(dir)) > 0 }

// queuedPlaces are the places queued in dir, in name order.
func queuedPlaces(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var ids []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && e.Type().IsRegular() {
			ids = append(ids, e.Name())
		}
	}
	return ids
}
