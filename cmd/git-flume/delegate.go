package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/git-flume/git-flume/stage/delegation"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/report"
)

// The commissioner's verbs on a delegated place. Each is run by
// the commissioner's agent from its place, or by a person.

func acceptCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:  "accept",
		Usage: "make a finished delegated place's work part of its commissioner's branch, and tidy it",
		Description: "The place's branch is merged into its commissioner's branch in the commissioner's work tree " +
			"(a fast-forward when it can be). A merge git refuses changes nothing and is reported with git's words.",
		UsageText: "git flume accept [--session ID] [--pid N] [--take-over] [--repo DIR] PLACE",
		Flags:     gateFlags(),
		Action: func(c *cli.Context) error {
			po, err := a.placeArg(c)
			if err != nil {
				return err
			}
			id := po.Place
			v, err := a.delegationVerbs(c.Context, po.Repo)
			if err != nil {
				return err
			}
			p, err := v.Accept(c.Context, po)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.io.Out, "%s: accepted; its work is on %s\n", id, p.Target)
			report.WriteKept(a.io.Out, p)
			return nil
		},
	}
}

func reopenCommand(a *app) *cli.Command {
	return delegateTextCommand(a, "reopen", "why", "send a finished delegated place back: a fresh agent on its current stage, told why",
		true, (*delegation.Verbs).Reopen)
}

func unblockCommand(a *app) *cli.Command {
	return delegateTextCommand(a, "unblock", "with", "move a blocked delegated place on: its waiting agent told TEXT, or a fresh agent told it",
		false, (*delegation.Verbs).Unblock)
}

func delegateTextCommand(a *app, name, flag, usage string, required bool,
	run func(*delegation.Verbs, context.Context, delegation.Options) (*record.Place, error)) *cli.Command {
	text := "TEXT"
	if required {
		text = "REASON"
	}
	return &cli.Command{
		Name:      name,
		Usage:     usage,
		UsageText: fmt.Sprintf("git flume %s %s [--session ID] [--pid N] [--take-over] [--repo DIR] PLACE", name, usageOf(flag, text, required)),
		Flags: append(gateFlags(), &cli.StringFlag{Name: flag,
			Usage: "what the delegated place's agent is told (stored byte for byte, never through a shell)"}),
		Action: func(c *cli.Context) error {
			po, err := a.placeArg(c)
			if err != nil {
				return err
			}
			id := po.Place
			if required && c.String(flag) == "" {
				return usageError{fmt.Errorf("%s needs --%s %s; see 'git flume %s -h'", name, flag, text, name)}
			}
			v, err := a.delegationVerbs(c.Context, po.Repo)
			if err != nil {
				return err
			}
			p, err := run(v, c.Context, delegation.Options{PlaceOptions: po, Text: c.String(flag)})
			if err != nil {
				return err
			}
			st := p.Stages[p.Current]
			resumed := ""
			if st.Agent != nil && st.Agent.Resumed {
				resumed = "; its agent's own session resumed"
			}
			fmt.Fprintf(a.io.Out, "%s: stage %s %s (run %d%s)\n", id, st.Name, st.State, st.Runs, resumed)
			return nil
		},
	}
}

// usageOf is how a usage line shows flag: bracketed when it may be left out.
func usageOf(flag, text string, required bool) string {
	if required {
		return "--" + flag + " " + text
	}
	return "[--" + flag + " " + text + "]"
}
