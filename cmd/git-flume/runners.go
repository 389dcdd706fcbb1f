package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/git-flume/git-flume/internal/cliargs"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/runner"
	"github.com/urfave/cli/v2"
)

// Places on other machines (issue 45): launch --on, and the runner's side.

// launchOn launches in's place on the runner named on, through the
// shared remote, and waits for its record (FLUME_RUNNER_WAIT, 2m).
func (a *app) launchOn(ctx context.Context, in launchInput, on string) error {
	r, err := a.stageEnv().OpenRepository(ctx, in.Repo)
	if err != nil {
		return err
	}
	remote, err := a.remote(ctx, "")
	if err != nil {
		return err
	}
	wait, err := time.ParseDuration(a.env.vars["FLUME_RUNNER_WAIT"])
	if err != nil {
		wait = 2 * time.Minute
	}
	p, err := runner.Launch(ctx, r, runner.Options{Runner: on, Kind: in.Kind, Name: in.Name, Brief: in.Brief, From: in.From, Target: in.Target,
		Agent: in.Agent, Remote: remote, Wait: wait})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.io.Out, "launched %s on runner %s: made on host %s, branch %s; its record comes with sync\n", p.ID, on, p.Host, p.Branch)
	return nil
}

func runHereCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "run-here",
		Usage:     "carry out the launch order a launch --on left on the shared remote: make its place here and share its record",
		UsageText: "git flume run-here [--repo DIR] [--remote NAME] PLACE",
		Description: "What a runner runs (an ssh runner runs it itself; a command runner's start line names it). " +
			"Everything is resolved on this side: paths, HOME, the agent and its configuration.",
		Flags: []cli.Flag{repoFlag(), &cli.StringFlag{Name: "remote", Usage: "the shared remote the order waits on (default: as sync chooses)"}},
		Action: func(c *cli.Context) error {
			id, err := onePlace(c)
			if err != nil {
				return err
			}
			r, err := a.stageEnv().OpenRepository(c.Context, c.String("repo"))
			if err != nil {
				return err
			}
			remote, err := a.remote(c.Context, c.String("remote"))
			if err != nil {
				return err
			}
			p, err := runner.RunHere(c.Context, r, remote, id, func(ctx context.Context, o runner.LaunchOrder) (*record.Place, error) {
				return place.New(r).Launch(ctx, place.LaunchOptions{Kind: o.Kind, Name: o.Name, Brief: o.Brief, From: o.From, Target: o.Target, Agent: o.Agent, Runner: o.Runner})
			})
			if p != nil {
				fmt.Fprintf(a.io.Out, "%s: made here for runner %s, and shared with %s\n", p.ID, p.Runner, remote)
			}
			return err
		},
	}
}

// viaRunner runs cmd, for a place of another host that one of this
// host's ssh runners made, on that runner (issue 45): one ssh command
// with the same flags and arguments, --repo aside; its exit status is the
// verb's.
func (a *app) viaRunner(cmd *cli.Command) *cli.Command {
	action := cmd.Action
	cmd.Action = func(c *cli.Context) error {
		r, err := a.stageEnv().OpenRepository(c.Context, c.String("repo"))
		if err != nil || !c.Args().Present() {
			return action(c)
		}
		args := append([]string{cmd.Name}, cliargs.SetFlags(c, cmd, "repo")...)
		done, err := runner.Forward(c.Context, r, c.Args().First(), append(args, c.Args().Slice()...),
			runner.Stdio{In: a.io.In, Out: a.io.RawOut, Err: a.io.RawErr, TTY: cmd.Name == "attach"})
		if exit := (*proc.ExitError)(nil); errors.As(err, &exit) {
			return silentExit{exit.Code}
		}
		if done {
			return err
		}
		return action(c)
	}
	return cmd
}
