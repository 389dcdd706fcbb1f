package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// manCommand prints the git-flume(1) man page generated from the command
// definitions; `make install` installs it so that `git help flume` and
// `git flume --help` (which git turns into `git help flume`) show it.
func manCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:   "man",
		Usage:  "print the git-flume(1) man page (roff)",
		Hidden: true,
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			page, err := c.App.ToManWithSection(1)
			if err != nil {
				return fmt.Errorf("generate man page: %w", err)
			}
			_, err = fmt.Fprint(a.io.Out, page)
			return err
		},
	}
}
