package main

import (
	"fmt"
	"runtime"

	"github.com/urfave/cli/v2"

	"github.com/git-flume/git-flume/internal/jsonfmt"
)

// versionInfo is the `version --json` document (schema 1).
type versionInfo struct {
	Schema  int    `json:"schema"`
	Version string `json:"version"`
	Go      string `json:"go"`
	Git     string `json:"git"`
}

func versionCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print git-flume's version and the git it runs",
		Flags: []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			info := versionInfo{Schema: 1, Version: buildVersion(), Go: runtime.Version()}
			gitVersion, err := a.runner.Version(c.Context)
			if err != nil {
				return fmt.Errorf("find git: %w", err)
			}
			info.Git = gitVersion
			if c.Bool("json") {
				return jsonfmt.Write(a.io.Out, info)
			}
			_, err = fmt.Fprintf(a.io.Out, "git-flume %s (%s, git %s)\n", info.Version, info.Go, info.Git)
			return err
		},
	}
}
