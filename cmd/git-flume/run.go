package main

import (
	"github.com/urfave/cli/v2"

	"github.com/git-flume/git-flume/internal/jsonfmt"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/report"
	"github.com/git-flume/git-flume/stage/runenv"
)

func envCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "env",
		Usage:     "print a place's run variables (its ports, its compose project name) as shell assignments",
		UsageText: "git flume env [--refresh] [--repo DIR] [--json] PLACE",
		Description: "For a repository whose .flume/config declares [run]: eval \"$(git flume env PLACE)\" gives a shell the " +
			"place's leased ports and compose project name, as readying, remove steps and the agent get them. " +
			"--refresh copies the place's env files from the main checkout again first.",
		Flags: []cli.Flag{repoFlag(), jsonFlag(),
			&cli.BoolFlag{Name: "refresh", Usage: "copy the place's env files from the main checkout again first"}},
		Action: func(c *cli.Context) error {
			id, err := onePlace(c)
			if err != nil {
				return err
			}
			vars, files, err := runenv.PlaceEnv(c.Context, a.stageEnv(), runenv.EnvOptions{
				PlaceOptions: stage.PlaceOptions{Repo: c.String("repo"), Place: id}, Refresh: c.Bool("refresh")})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return jsonfmt.Write(a.io.Out, report.NewPlaceEnv(id, vars, files))
			}
			report.WriteEnv(a.io.Out, a.io.Err, vars, files)
			return nil
		},
	}
}
