package stage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/git"
)

// Settings are the repository's flume.* git configuration keys: who this
// host is in records, which remote sync talks to, whether commands sync
// after they move state (R7). What a repository's work needs is in its
// committed .flume/config (Config); these are the clone's own.
type Settings struct {
	Host     string // flume.host
	Remote   string // flume.remote
	AutoSync bool   // flume.autoSync
	// Beat is how often the watchers of places made for runners share
	// this host's records and work (flume.beat, default 1m; M4).
	Beat time.Duration
	// Repositories are the main checkouts this host launched places in
	// (flume.repository, every value, kept in the user's global git
	// configuration): the index status --host reads.
	Repositories []string
}

// ReadSettings reads the flume.* keys of the repository containing dir
// (a command's --repo), in one git process.
func ReadSettings(ctx context.Context, runner *git.Runner, dir string) (Settings, error) {
	s := Settings{Beat: time.Minute}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return s, err
	}
	entries, err := runner.ConfigIn(ctx, abs)
	if err != nil {
		return s, err
	}
	for _, e := range entries {
		switch e.Key {
		case "flume.host":
			s.Host = e.Value
		case "flume.remote":
			s.Remote = e.Value
		case "flume.autosync":
			s.AutoSync = isTrue(e.Value)
		case "flume.beat":
			if d, err := time.ParseDuration(e.Value); err == nil && d >= time.Second {
				s.Beat = d
			}
		case RepositoryKey:
			s.Repositories = append(s.Repositories, e.Value)
		}
	}
	return s, nil
}

// HostName names this host in the records of a repository with settings
// set: FLUME_HOST in the caller's environment env, else the repository's
// flume.host, else the hostname. Each repository has its own: status
// --host and the board judge each by its own name, not the caller's.
func HostName(env []string, set Settings) string {
	for i := len(env) - 1; i >= 0; i-- {
		if h, ok := strings.CutPrefix(env[i], "FLUME_HOST="); ok && h != "" {
			return h
		}
	}
	if set.Host != "" {
		return set.Host
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "localhost"
}

// RepositoryKey is the global git configuration key that lists, one value
// each, the main checkouts this host launched places in.
const RepositoryKey = "flume.repository"

// IndexRepository adds main, a main checkout a place was launched in, to
// the host's index of repositories unless known already lists it: one git
// process the first time, none after (known is every scope's values, read
// with the command's settings).
func IndexRepository(ctx context.Context, runner *git.Runner, main string, known []string) error {
	if slices.Contains(known, main) {
		return nil
	}
	return runner.AddGlobalConfig(ctx, RepositoryKey, main)
}

// RemoteUnchosenError is a sync, or a shared claim, that names no remote
// in a clone that never chose one (R7): sharing records is the user's
// choice, made once by naming the remote or setting flume.remote.
type RemoteUnchosenError struct {
	Default string // the remote it would have used
}

func (e *RemoteUnchosenError) Error() string {
	return fmt.Sprintf("no remote chosen to share records with: this clone never synced with %s; name it once "+
		"(git flume sync %s) or set flume.remote. Sync shares this host's records under refs/flume/ (briefs, place paths, "+
		"branch and host names, claims, workspace requests), never branches", e.Default, e.Default)
}

// SyncRemote is the remote records are shared with (R7): the one named,
// else flume.remote, else origin once this clone has synced with it
// before. The first sync with a remote is never a default.
func SyncRemote(ctx context.Context, env *Env, repoDir, named string, set Settings) (string, error) {
	switch {
	case named != "":
		return named, nil
	case set.Remote != "":
		return set.Remote, nil
	}
	_, store, err := env.Open(ctx, repoDir)
	if err != nil {
		return "", err
	}
	synced, err := store.Synced(ctx, "origin")
	if err != nil {
		return "", err
	}
	if !synced {
		return "", &RemoteUnchosenError{Default: "origin"}
	}
	return "origin", nil
}
