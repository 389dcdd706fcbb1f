package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
)

// settings are the repository's flume.* keys (stage.Settings), read once
// per command from the repository its --repo names, and why they could
// not be read.
type settings struct {
	stage.Settings
	err error
}

// settings reads the repository's flume.* keys on first use.
func (a *app) settings(ctx context.Context) settings {
	a.settingsOnce.Do(func() {
		a.set.Settings, a.set.err = stage.ReadSettings(ctx, a.runner, a.repoDir)
	})
	return a.set
}

// host names this host in records: FLUME_HOST, else the repository's
// flume.host, else the hostname.
func (a *app) host() string {
	return stage.HostName(a.env.list, a.settings(context.Background()).Settings)
}

// remote is the remote sync talks to: the one named, else flume.remote,
// else origin once this clone synced with it (stage.SyncRemote).
func (a *app) remote(ctx context.Context, named string) (string, error) {
	if named != "" {
		return named, nil
	}
	set := a.settings(ctx)
	if set.err != nil {
		return "", set.err
	}
	return stage.SyncRemote(ctx, a.stageEnv(), a.repoDir, "", set.Settings)
}

// noteRepo makes every command that takes --repo record it before its
// action runs, so the settings come from the repository it acts on. Such a
// command opens that repository (rev-parse) and most read its settings
// (git config, for the host at least): both start here, side by side,
// instead of one after the other once the action asks.
func (a *app) noteRepo(cmds []*cli.Command) {
	for _, cmd := range cmds {
		a.noteRepo(cmd.Subcommands)
		before := cmd.Before
		// By the flag's own name: Names() runs a regular expression over
		// each, and this ran for every flag of every command at every
		// start.
		takesRepo := slices.ContainsFunc(cmd.Flags, func(f cli.Flag) bool {
			sf, ok := f.(*cli.StringFlag)
			return ok && sf.Name == "repo"
		})
		cmd.Before = func(c *cli.Context) error {
			if c.IsSet("repo") {
				a.repoDir = c.String("repo")
			}
			if takesRepo {
				// Warms the runner's cache of the repository while the
				// settings are read; the command's own Open reports.
				go func() { _, _ = a.runner.Open(c.Context, a.repoDir) }()
				go a.settings(c.Context)
				// R5, R7: this host's name goes into every record it
				// writes and is printed wherever one is read.
				if err := refs.ValidateHost(a.host()); err != nil {
					return fmt.Errorf("this host's name (FLUME_HOST, else flume.host, else the hostname) is not usable in records: %w; set flume.host", err)
				}
			}
			if before != nil {
				return before(c)
			}
			return nil
		}
	}
}
