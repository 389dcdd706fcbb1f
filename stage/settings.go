package stage

import (
	"context"
	"path/filepath"

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
}

// ReadSettings reads the flume.* keys of the repository containing dir
// (a command's --repo), in one git process.
func ReadSettings(ctx context.Context, runner *git.Runner, dir string) (Settings, error) {
	var s Settings
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
		}
	}
	return s, nil
}
