package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/stage"
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
				m := map[string]string{}
				for _, kv := range vars {
					k, v, _ := strings.Cut(kv, "=")
					m[k] = v
				}
				return writeJSON(a.io.Out, map[string]any{"schema": 1, "place": id, "vars": m, "env": files})
			}
			for _, kv := range vars {
				k, v, _ := strings.Cut(kv, "=")
				fmt.Fprintf(a.io.Out, "export %s=%s\n", k, agent.ShellQuote(v))
			}
			for _, f := range files {
				if f.Skipped != "" {
					fmt.Fprintf(a.io.Err, "# %s not copied: %s\n", f.Path, f.Skipped)
				}
			}
			return nil
		},
	}
}
