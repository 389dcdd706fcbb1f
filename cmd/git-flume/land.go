package main

import (
	"fmt"

	"github.com/git-flume/git-flume/stage/report"
	"github.com/urfave/cli/v2"
)

// The lander's verbs (Q): a place's branch submitted, and the queue run.

func submitCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:        "submit",
		Usage:       "submit a place's branch, as it stands, to the lander",
		UsageText:   "git flume submit [--repo DIR] PLACE",
		Description: "git flume land then proves its merge onto the target's tip with the checks .flume/config declares, and lands it.",
		Flags:       []cli.Flag{repoFlag()},
		Action: func(c *cli.Context) error {
			id, err := onePlace(c)
			if err != nil {
				return err
			}
			l, err := a.lander(c)
			if err != nil {
				return err
			}
			e, err := l.Submit(c.Context, id)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.io.Out, "%s: submitted at %.12s for %s (%s)\n", id, e.Tip, e.Target, e.State)
			return nil
		},
	}
}

func landCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "land",
		Usage:     "prove and land the submitted places, one at a time: the target moves only to a candidate checked on its exact tip",
		UsageText: "git flume land [--repo DIR]",
		Description: "Each entry's candidate (its branch merged onto the target's tip) is checked in a throwaway worktree with the " +
			"[land] checks of .flume/config on the target, and the target moves from that tip to the candidate in the transaction " +
			"that records the proof. A target that moved meanwhile voids the proof; a red check or a conflict returns the entry " +
			"(exit 1).",
		Flags: []cli.Flag{repoFlag()},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			l, err := a.lander(c)
			if err != nil {
				return err
			}
			done, err := l.Run(c.Context)
			returned := report.WriteLanding(a.io.Out, done)
			if err == nil && returned {
				return silentExit{exitError}
			}
			return err
		},
	}
}
