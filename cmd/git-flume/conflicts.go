package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/git-flume/git-flume/internal/jsonfmt"
	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/stage/radar"
	"github.com/git-flume/git-flume/stage/record"
)

func conflictsCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "conflicts",
		Usage:     "which open places would conflict with each other, or with their target, if merged now",
		UsageText: "git flume conflicts [--repo DIR] [--json]",
		Description: "Brings this host's places' fingerprints up to date (their uncommitted work included, snapshot through " +
			"a throwaway index), then merges, in memory, each of this host's open places with work to land with its target's " +
			"tip and with each other (git merge-tree --write-tree: no work tree or index is touched; exact), cached by the " +
			"commits. A place of another host (shared by sync) is compared by fingerprint: the files and lines each change " +
			"touches; not exact. Exits 1 when there is a conflict.",
		Flags: []cli.Flag{repoFlag(), jsonFlag()},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			cs, err := radar.ReadConflicts(c.Context, a.stageEnv(), c.String("repo"))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				if cs == nil {
					cs = []record.Conflict{}
				}
				if err := jsonfmt.Write(a.io.Out, map[string]any{"schema": 1, "conflicts": cs}); err != nil {
					return err
				}
			} else {
				if len(cs) == 0 {
					fmt.Fprintln(a.io.Out, "no conflicts: every open place merges cleanly with its target and with the others")
				}
				for _, x := range cs {
					// Paths and names may come from another host's record.
					fmt.Fprintf(a.io.Out, "%s conflicts with %s: %s%s\n", term.Clean(x.Place), term.Clean(x.With),
						term.Clean(strings.Join(x.Files, ", ")), notExact(x))
				}
			}
			if len(cs) > 0 {
				return silentExit{exitError}
			}
			return nil
		},
	}
}

func landOrderCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "land-order",
		Usage:     "an order to land the open places in that lands the independent ones first, each step explained",
		UsageText: "git flume land-order [--repo DIR] [--json]",
		Description: "Among this host's open places with work to land: first those that conflict with neither their target " +
			"nor any place still to land, finished (last stage delivered) before unfinished, then the smaller overlaps.",
		Flags: []cli.Flag{repoFlag(), jsonFlag()},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			steps, err := radar.LandOrder(c.Context, a.stageEnv(), c.String("repo"))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				if steps == nil {
					steps = []radar.LandStep{}
				}
				return jsonfmt.Write(a.io.Out, map[string]any{"schema": 1, "order": steps})
			}
			if len(steps) == 0 {
				fmt.Fprintln(a.io.Out, "nothing to land")
			}
			for i, s := range steps {
				state := "finished"
				if !s.Finished {
					state = "not finished"
				}
				fmt.Fprintf(a.io.Out, "%d. %s (%s): %s\n", i+1, term.Clean(s.Place), state, term.Clean(s.Why))
			}
			return nil
		},
	}
}

// notExact marks a conflict predicted from fingerprints.
func notExact(c record.Conflict) string {
	if c.Exact {
		return ""
	}
	return " (" + c.How() + ")"
}
