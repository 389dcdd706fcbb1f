package main

import (
	"context"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/git-flume/git-flume/internal/jsonfmt"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/report"
)

func syncCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "sync",
		Usage:     "share records with other hosts through a git remote",
		UsageText: "git flume sync [--repo DIR] [--json] [REMOTE]",
		Description: "Lists the remote's refs/flume/*, fetches the records that differ (no ref moves) and checks each as " +
			"untrusted input: an invalid one, or one naming this host, is never taken. Takes other hosts' valid records " +
			"only forward (tracked in refs/flume-tracked/<remote>), and pushes this host's own records atomically, each leased on what the remote had; a push " +
			"refused because another host pushed first is fetched and decided again. Branches are never touched. " +
			"Before pushing, the conflict radar's fingerprint of each of this host's places whose head moved is taken again. " +
			"REMOTE defaults to flume.remote, else origin once this clone synced with it: the first sync with a remote is named " +
			"(or set in flume.remote), since it shares this host's records (briefs, paths, branch and host names).",
		Flags: []cli.Flag{repoFlag(), jsonFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usagef("sync: at most one remote")
			}
			store, err := a.store(c.Context, c.String("repo"))
			if err != nil {
				return err
			}
			remote, err := a.remote(c.Context, c.Args().First())
			if err != nil {
				return err
			}
			if synced, err := store.Synced(c.Context, remote); err == nil && !synced {
				fmt.Fprintf(a.io.Err, "git-flume: first sync with %s: sharing this host's records under refs/flume/ "+
					"(briefs, place paths, branch and host names, claims, workspace requests); branches are never pushed\n", remote)
			}
			ps, err := a.places(c.Context, c.String("repo"))
			if err != nil {
				return err
			}
			rep, err := ps.Share(c.Context, remote)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return jsonfmt.Write(a.io.Out, rep)
			}
			report.WriteSync(a.io.Out, rep)
			return nil
		},
	}
}

func sharedFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "shared", Usage: "exclusive across hosts: held only once the remote took it (R8)"},
		&cli.StringFlag{Name: "remote", Usage: "the shared remote (default: flume.remote, else origin)"},
	}
}

// withAutoSync runs a sync after a command that moved state, when the
// repository sets flume.autoSync = true (R7). A failed sync is reported and
// never fails the command: the local move stands.
func (a *app) withAutoSync(cmd *cli.Command) *cli.Command {
	action := cmd.Action
	cmd.Action = func(c *cli.Context) error {
		// The settings are needed at the end (and for the host at the
		// start): read them while the command opens the repository.
		go a.settings(c.Context)
		if err := action(c); err != nil {
			return err
		}
		a.autoSync(c.Context, a.io.Err)
		return nil
	}
	return cmd
}

// autoSync syncs with the repository's remote after a command that moved
// state, when flume.autoSync is set (R7); a failure is told to errOut and
// the local change stands.
func (a *app) autoSync(ctx context.Context, errOut io.Writer) {
	if !a.settings(ctx).AutoSync {
		return
	}
	if _, err := a.store(ctx, a.repoDir); err != nil {
		return // not in a repository
	}
	remote, err := a.remote(ctx, "")
	var ps *place.Places
	if err == nil {
		ps, err = a.places(ctx, a.repoDir)
	}
	if err == nil {
		_, err = ps.Share(ctx, remote)
	}
	if err != nil {
		fmt.Fprintf(errOut, "git-flume: auto-sync with %s failed (the local change stands; run git flume sync): %v\n", remote, err)
	}
}
