package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/git-flume/git-flume/stage/place"
)

func doctorCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "doctor",
		Usage:     "check what a stage needs here: git, the pane host, the hooks, and each agent program's setup",
		UsageText: "git flume doctor [--repo DIR] [--json]",
		Description: "Per agent program (claude, codex, pi and any declared): found on PATH, its version, whether it can start " +
			"here unattended, and what to set up first (onboarding, credentials, trust of new folders). Reads only; exit 1 when " +
			"a launch with the default agent could not start.",
		Flags: []cli.Flag{repoFlag(), jsonFlag()},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			d, err := place.Diagnose(c.Context, a.stageEnv(), c.String("repo"))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				if err := writeJSON(a.io.Out, d); err != nil {
					return err
				}
			} else {
				writeDoctor(a.io.Out, d)
			}
			if !d.OK() {
				return silentExit{exitError}
			}
			return nil
		},
	}
}

func writeDoctor(w io.Writer, d *place.Doctor) {
	fmt.Fprintf(w, "git %s\n", d.Git)
	if d.PaneHostProblem != "" {
		fmt.Fprintf(w, "pane host %s: missing: %s\n", d.PaneHost, d.PaneHostProblem)
	} else {
		fmt.Fprintf(w, "pane host %s: ok\n", d.PaneHost)
	}
	switch {
	case d.Repo == "":
	case d.Hooks:
		fmt.Fprintf(w, "hooks in %s: ok\n", d.Repo)
	default:
		fmt.Fprintf(w, "hooks in %s: missing: run git flume install\n", d.Repo)
	}
	switch {
	case d.Repo == "":
	case d.CopyOnWrite:
		fmt.Fprintf(w, "copy-on-write clones in %s: yes ([run] deps are cloned)\n", d.Repo)
	default:
		fmt.Fprintf(w, "copy-on-write clones in %s: no (%s): [run] deps are copied in full\n", d.Repo, d.CopyOnWriteProblem)
	}
	fmt.Fprintf(w, "agents (a launch uses %s unless --agent or FLUME_AGENT says otherwise):\n", d.Default)
	for _, r := range d.Agents {
		state := "cannot start here"
		if r.CanStart {
			state = "can start"
		}
		line := "  " + r.Name + ": " + state
		if r.Version != "" {
			line += ", " + r.Version
		}
		fmt.Fprintln(w, line)
		for _, c := range r.Checks {
			fmt.Fprintf(w, "    %-7s %-11s %s\n", c.Status, c.Name, c.Detail)
		}
	}
}
