package stage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/lockfile"
	"github.com/git-flume/git-flume/stage/record"
)

// What the lander keeps beside git's files (Q4): its lock (one lander runs
// in a repository at a time), the file where the one holding it says who it
// is, and the folder of its throwaway check worktrees.

// LandLock is the lander's lock of the repository at commonDir.
func LandLock(commonDir string) string { return filepath.Join(commonDir, "flume", "land.lock") }

// LandChecks is the folder of the lander's check worktrees, one a place
// (.git/flume/land/<place>), each removed when its check ends.
func LandChecks(commonDir string) string { return filepath.Join(commonDir, "flume", "land") }

func landHolder(commonDir string) string { return filepath.Join(commonDir, "flume", "land.holder") }

type lander struct {
	record.Proc
	Since time.Time `json:"since"`
}

// SayLander says, beside the lock it holds, that this process is the
// lander: what status and a second lander name. The lock is what holds.
func SayLander(env *Env, commonDir string) {
	data, _ := json.Marshal(lander{Proc: *env.Self(), Since: env.NowUTC()})
	_ = ReplaceFile(landHolder(commonDir), data, 0o644)
}

// LanderRunning names the lander that runs in the repository at
// commonDir, as host sees it ("pid 4242 since 2026-12-06 10:00:00 UTC"),
// or "" when none does. A read: its file is flume's, read without
// following a link, and named only while that very process runs.
func LanderRunning(commonDir, host string) string {
	f, err := os.OpenFile(landHolder(commonDir), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1024))
	var h lander
	if err != nil || json.Unmarshal(data, &h) != nil || h.Host != host || h.PID <= 0 || !h.Alive(host) {
		return ""
	}
	return fmt.Sprintf("pid %d since %s", h.PID, h.Since.UTC().Format("2006-01-02 15:04:05 UTC"))
}

// LandLeftovers are the check worktrees a lander killed mid-check left
// (a check's folder while no lander runs here), by path. A read.
func LandLeftovers(commonDir, host string) []string {
	entries, err := os.ReadDir(LandChecks(commonDir))
	if err != nil || len(entries) == 0 || LanderRunning(commonDir, host) != "" {
		return nil
	}
	var paths []string
	for _, e := range entries {
		paths = append(paths, filepath.Join(LandChecks(commonDir), e.Name()))
	}
	return paths
}

// RemoveLandLeftovers removes the check worktrees a killed lander left,
// from git's list and from disk, holding the lander's lock: while a
// lander runs, nothing. It returns what it removed.
func RemoveLandLeftovers(ctx context.Context, repo *git.Repo) ([]string, error) {
	entries, err := os.ReadDir(LandChecks(repo.CommonDir))
	if err != nil || len(entries) == 0 {
		return nil, nil
	}
	lock, err := lockfile.TryTake(LandLock(repo.CommonDir))
	if errors.Is(err, lockfile.ErrBusy) {
		return nil, nil // a lander runs: its worktrees are its own
	}
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	var removed []string
	for _, e := range entries {
		path := filepath.Join(LandChecks(repo.CommonDir), e.Name())
		_ = repo.RemoveWorktree(ctx, path, true) // gone from git's list already, if git removed it
		if err := os.RemoveAll(path); err != nil {
			return removed, fmt.Errorf("a killed lander's check worktree %s: %w", path, err)
		}
		removed = append(removed, path)
	}
	return removed, repo.PruneWorktrees(ctx)
}
