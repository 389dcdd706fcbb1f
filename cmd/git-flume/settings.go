package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"
)

// settings are the repository's flume.* git config keys that the command
// layer needs. They are read once per command, in one git process, from
// the repository the command's --repo names.
type settings struct {
	host     string // flume.host
	remote   string // flume.remote
	autoSync bool   // flume.autoSync (R7)
	err      error  // why the configuration could not be read
}

// settings reads the repository's flume.* keys on first use.
func (a *app) settings(ctx context.Context) settings {
	a.settingsOnce.Do(func() {
		dir, err := filepath.Abs(a.repoDir)
		if err != nil {
			a.set.err = err
			return
		}
		entries, err := a.runner.ConfigIn(ctx, dir)
		if err != nil {
			a.set.err = err
			return
		}
		for _, e := range entries {
			switch e.Key {
			case "flume.host":
				a.set.host = e.Value
			case "flume.remote":
				a.set.remote = e.Value
			case "flume.autosync":
				a.set.autoSync = e.Value == "true" || e.Value == "yes" || e.Value == "on" || e.Value == "1"
			}
		}
	})
	return a.set
}

// host names this host in records: FLUME_HOST, else the repository's
// flume.host, else the hostname.
func (a *app) host() string {
	if h := a.env.vars["FLUME_HOST"]; h != "" {
		return h
	}
	if h := a.settings(context.Background()).host; h != "" {
		return h
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "localhost"
}

// remote is the remote sync talks to: the one named, else flume.remote,
// else origin.
func (a *app) remote(ctx context.Context, named string) (string, error) {
	if named != "" {
		return named, nil
	}
	set := a.settings(ctx)
	if set.err != nil {
		return "", set.err
	}
	if set.remote != "" {
		return set.remote, nil
	}
	return "origin", nil
}

// noteRepo makes every command that takes --repo record it before its
// action runs, so the settings come from the repository it acts on.
func (a *app) noteRepo(cmds []*cli.Command) {
	for _, cmd := range cmds {
		a.noteRepo(cmd.Subcommands)
		before := cmd.Before
		cmd.Before = func(c *cli.Context) error {
			if c.IsSet("repo") {
				a.repoDir = c.String("repo")
			}
			if before != nil {
				return before(c)
			}
			return nil
		}
	}
}
