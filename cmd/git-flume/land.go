package main

import (
	"fmt"

	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/stage"
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
			if dir, ok := l.Auto(c.Context, e); ok {
				if err := proc.Detach([]string{"land", "--repo", dir, "--wait"}, dir, stage.BackgroundEnv(a.env.list)); err != nil {
					a.warn("could not start the lander; git flume land lands it", "place", id, "err", err)
				}
			}
			return nil
		},
	}
}

func landCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "land",
		Usage:     "prove and land the submitted places, one at a time: the target moves only to a candidate checked on its exact tip",
		UsageText: "git flume land [--repo DIR] [--remote NAME] [--wait]",
		Description: "Each entry's candidate (its branch merged onto the target's tip) is checked in a throwaway worktree with the " +
			"[land] checks of .flume/config on the target, and the target moves from that tip to the candidate in the transaction " +
			"that records the proof. A target that moved meanwhile voids the proof; a red check or a conflict returns the entry " +
			"(exit 1). With --remote (or [land] remote), the target is the remote's, and lands by a leased push.",
		Flags: []cli.Flag{repoFlag(), &cli.StringFlag{Name: "remote", Usage: "land on this shared remote's target, by a push leased on the tip proven"},
			&cli.BoolFlag{Name: "wait", Usage: "wait for a lander already running in the repository to end, rather than refuse"}},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			l, err := a.lander(c)
			if err != nil {
				return err
			}
			l.Remote, l.Wait = c.String("remote"), c.Bool("wait")
			done, err := l.Run(c.Context)
			returned := report.WriteLanding(a.io.Out, done)
			if err == nil && returned {
				return silentExit{exitError}
			}
			return err
		},
	}
}

func approveCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "approve",
		Usage:     "approve a place's entry the lander proved green on its target's tip; with no place, list those waiting",
		UsageText: "git flume approve [--repo DIR] [PLACE]",
		Flags:     []cli.Flag{repoFlag()},
		Action: func(c *cli.Context) error {
			l, err := a.lander(c)
			if err != nil || c.NArg() == 0 {
				if err == nil {
					err = report.WriteWaiting(c.Context, a.io.Out, l.Waiting)
				}
				return err
			}
			id, err := onePlace(c)
			if err != nil {
				return err
			}
			e, err := l.Approve(c.Context, id)
			if err == nil {
				fmt.Fprintf(a.io.Out, "%s: approved at %.12s by %s; git flume land lands it\n", id, e.Tip, e.Approval.By)
			}
			return err
		},
	}
}
