package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/git-flume/git-flume/internal/jsonfmt"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage/runner"
)

type fsckOptions struct {
	Repo string
	JSON bool
}

// fsckReport is the `fsck --json` document (schema 1).
type fsckReport struct {
	Schema   int           `json:"schema"`
	Records  int           `json:"records"`
	Problems []fsckProblem `json:"problems"`
}

type fsckProblem struct {
	Ref   string `json:"ref"`
	Error string `json:"error"`
}

func fsckCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:  "fsck",
		Usage: "check that every record under refs/flume reads and is of a known schema",
		Description: "Prints one line per problem, naming its ref, and exits 1 when it found one. " +
			"A record of a newer schema is reported and left alone.",
		Flags: []cli.Flag{repoFlag(), jsonFlag()},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			return runFsck(c.Context, a, fsckOptions{Repo: c.String("repo"), JSON: c.Bool("json")})
		},
	}
}

func runFsck(ctx context.Context, a *app, opts fsckOptions) error {
	store, err := a.store(ctx, opts.Repo)
	if err != nil {
		return err
	}
	records, problems, err := store.List(ctx, refs.Prefix)
	if err != nil {
		return err
	}
	report := fsckReport{Schema: 1, Records: len(records), Problems: []fsckProblem{}}
	for _, p := range problems {
		report.Problems = append(report.Problems, fsckProblem{Ref: p.Ref, Error: p.Err.Error()})
	}
	for _, o := range runner.RefusedOrders(store.Repo().CommonDir) { // M1
		report.Problems = append(report.Problems, fsckProblem{Ref: runner.OrderPrefix + o.Place, Error: o.String()})
	}
	if opts.JSON {
		if err := jsonfmt.Write(a.io.Out, report); err != nil {
			return err
		}
	} else {
		for _, p := range report.Problems {
			fmt.Fprintln(a.io.Out, p.Error)
		}
		fmt.Fprintf(a.io.Out, "%d records read, %d problems\n", len(records)+len(problems), len(report.Problems))
	}
	if len(report.Problems) > 0 {
		return silentExit{code: exitError}
	}
	return nil
}
