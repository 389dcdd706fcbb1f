package main

import (
	"github.com/urfave/cli/v2"

	"github.com/git-flume/git-flume/internal/jsonfmt"
	"github.com/git-flume/git-flume/stage/doctor"
	"github.com/git-flume/git-flume/stage/report"
)

func doctorCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "doctor",
		Usage:     "check what a stage needs here: git, the pane host, the hooks, and each agent program's setup",
		UsageText: "git flume doctor [--repo DIR] [--json] [--on RUNNER]",
		Description: "Per agent program (claude, codex, pi and any declared): found on PATH, its version, whether it can start " +
			"here unattended, and what to set up first (onboarding, credentials, trust of new folders). Reads only; exit 1 when " +
			"a launch with the default agent could not start. --on checks an ssh runner's, there, with its own setup.",
		Flags: []cli.Flag{repoFlag(), jsonFlag(), &cli.StringFlag{Name: "on", Usage: "check ssh runner RUNNER's setup, on it"}},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			if on := c.String("on"); on != "" {
				return a.onRunner(c, on)
			}
			d, err := doctor.Diagnose(c.Context, a.stageEnv(), c.String("repo"))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				if err := jsonfmt.Write(a.io.Out, d); err != nil {
					return err
				}
			} else {
				report.WriteDoctor(a.io.Out, d)
			}
			if !d.OK() {
				return silentExit{exitError}
			}
			return nil
		},
	}
}
