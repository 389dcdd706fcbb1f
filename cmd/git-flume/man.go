//go:build !urfave_cli_no_docs

package main

import (
	"fmt"
	"strings"

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
			restore := markdownSafeUsage(c.App.Commands)
			page, err := c.App.ToManWithSection(1)
			restore()
			if err != nil {
				return fmt.Errorf("generate man page: %w", err)
			}
			_, err = fmt.Fprint(a.io.Out, page)
			return err
		},
	}
}

// markdownSafeUsage escapes what the man page's markdown step reads as
// markup in every usage line ("[--name N] (--brief …)" became a link, so
// --name looked required) and returns how to undo it: -h prints
// the lines as written.
func markdownSafeUsage(cmds []*cli.Command) (restore func()) {
	var undo []func()
	var walk func([]*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			if cmd.UsageText != "" {
				was := cmd.UsageText
				cmd.UsageText = markdownEscaper.Replace(was)
				undo = append(undo, func() { cmd.UsageText = was })
			}
			walk(cmd.Subcommands)
		}
	}
	walk(cmds)
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

var markdownEscaper = strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`, "(", `\(`, ")", `\)`, "*", `\*`, "_", `\_`, "<", `\<`, ">", `\>`, "`", "\\`")
