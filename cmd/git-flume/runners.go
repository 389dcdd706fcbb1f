package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/git-flume/git-flume/internal/cliargs"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/stage"
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
	p, err := runner.Launch(ctx, r, runner.Options{Runner: on, Kind: in.Kind, Name: in.Name, Brief: in.Brief, From: in.From, Target: in.Target,
		Agent: in.Agent, Remote: remote, Wait: a.runnerWait()})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.io.Out, "launched %s on runner %s: made on host %s, branch %s; its record comes with sync\n", p.ID, on, p.Host, p.Branch)
	return nil
}

func adoptCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "adopt",
		Usage:     "start a place of a lost host again on a runner, from the work that host last shared",
		UsageText: "git flume adopt --on RUNNER [--name N] [--why TEXT] [--force] [--repo DIR] PLACE",
		Description: "The new place (default name: the old one's with -2, -3 …) has the old one's kind, target, agent and brief, " +
			"and its branch starts from refs/flume-work/<place> on the shared remote. Its record names the place it adopts, " +
			"from which work, why and by whom; status shows the old place lost by it. A host heard within its limit is refused.",
		Flags: []cli.Flag{repoFlag(), &cli.StringFlag{Name: "on", Required: true, Usage: "the runner that carries it on"},
			&cli.StringFlag{Name: "name", Usage: "the new place's name"}, &cli.StringFlag{Name: "why", Usage: "what you know of the loss, recorded"},
			&cli.BoolFlag{Name: "force", Usage: "adopt though its host was heard within its limit (two agents then work on it)"}},
		Action: func(c *cli.Context) error {
			id, r, err := a.placeRepo(c)
			if err != nil {
				return err
			}
			o := runner.AdoptOptions{Place: id, Runner: c.String("on"), Name: c.String("name"), Why: c.String("why"), Force: c.Bool("force"), Wait: a.runnerWait()}
			if o.Remote, err = a.remote(c.Context, ""); err != nil {
				return err
			}
			p, err := runner.Adopt(c.Context, r, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.io.Out, "%s adopted as %s on runner %s: made on host %s, branch %s from %.12s\n", id, p.ID, o.Runner, p.Host, p.Branch, p.Base)
			return nil
		},
	}
}

// runnerWait bounds the wait for a runner's place record:
// FLUME_RUNNER_WAIT, default 2m.
func (a *app) runnerWait() time.Duration {
	if wait, err := time.ParseDuration(a.env.vars["FLUME_RUNNER_WAIT"]); err == nil {
		return wait
	}
	return 2 * time.Minute
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
			id, r, err := a.placeRepo(c)
			if err != nil {
				return err
			}
			remote, err := a.remote(c.Context, c.String("remote"))
			if err != nil {
				return err
			}
			p, err := runner.RunHere(c.Context, r, remote, id, func(ctx context.Context, o runner.LaunchOrder) (*record.Place, error) {
				return place.New(r).Launch(ctx, place.LaunchOptions{Kind: o.Kind, Name: o.Name, Brief: o.Brief, From: o.From, Target: o.Target, Agent: o.Agent, Runner: o.Runner, Adopts: o.Adopts})
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
// verb's. A verb that moves records has them shared there and brought
// here by a sync.
func (a *app) viaRunner(cmd *cli.Command) *cli.Command {
	action := cmd.Action
	shares := !slices.Contains([]string{"explain", "attach", "env"}, cmd.Name)
	cmd.Action = func(c *cli.Context) error {
		r, err := a.stageEnv().OpenRepository(c.Context, c.String("repo"))
		if err != nil || !c.Args().Present() {
			return action(c)
		}
		args := append([]string{cmd.Name}, cliargs.SetFlags(c, cmd, "repo")...)
		done, err := runner.Forward(c.Context, r, c.Args().First(), append(args, c.Args().Slice()...),
			runner.Stdio{In: a.io.In, Out: a.io.RawOut, Err: a.io.RawErr, TTY: cmd.Name == "attach", Shares: shares,
				SayForwards: cmd.Name == "env" && !c.Bool("json")})
		if exit := (*proc.ExitError)(nil); errors.As(err, &exit) {
			return silentExit{exit.Code}
		}
		if !done {
			return action(c)
		}
		if err == nil && shares {
			a.bringRecords(c.Context, r)
		}
		return err
	}
	return cmd
}

// bringRecords syncs with the shared remote after a verb ran on a
// runner, so this host shows what it moved there; a failure is told.
func (a *app) bringRecords(ctx context.Context, r *stage.Repository) {
	remote, err := a.remote(ctx, "")
	if err == nil {
		_, err = place.New(r).Share(ctx, remote)
	}
	if err != nil {
		fmt.Fprintf(a.io.Err, "git-flume: done on the runner; its records are not here yet (git flume sync): %v\n", err)
	}
}

// tidyOnRunners runs tidy, with its flags, on each ssh runner whose
// places' work is over by the records (M3), after this host's own.
func (a *app) tidyOnRunners(c *cli.Context) error {
	r, err := a.stageEnv().OpenRepository(c.Context, c.String("repo"))
	if err != nil {
		return err
	}
	ran, err := runner.TidyThere(c.Context, r, cliargs.SetFlags(c, c.Command, "repo"), runner.Stdio{Out: a.io.RawOut, Err: a.io.RawErr})
	if len(ran) > 0 {
		a.bringRecords(c.Context, r)
	}
	if exit := (*proc.ExitError)(nil); errors.As(err, &exit) {
		return silentExit{exit.Code}
	}
	return err
}

// onRunner runs c's verb, with its flags less --repo and --on, on ssh
// runner on.
func (a *app) onRunner(c *cli.Context, on string) error {
	r, err := a.stageEnv().OpenRepository(c.Context, c.String("repo"))
	if err != nil {
		return err
	}
	args := append([]string{c.Command.Name}, cliargs.SetFlags(c, c.Command, "repo", "on")...)
	err = runner.On(c.Context, r, on, args, runner.Stdio{In: a.io.In, Out: a.io.RawOut, Err: a.io.RawErr})
	if exit := (*proc.ExitError)(nil); errors.As(err, &exit) {
		return silentExit{exit.Code}
	}
	return err
}
