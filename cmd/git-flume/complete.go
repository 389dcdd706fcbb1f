package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/git-flume/git-flume/stage"
)

// placeCommands take a place as their argument.
var placeCommands = []string{"status", "explain", "tell", "attach", "stop", "retry", "go-on", "wait", "advance", "drop", "use", "release", "rollback", "log", "cost", "export"}

// completeCommand prints what may come next on a command line, one per
// line, for the bash and zsh completion scripts (make install puts them in
// place): the commands, a command's subcommands, or the repository's place
// names.
func completeCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "complete",
		Hidden:    true,
		Usage:     "print what may come next after the given words (shell completion)",
		UsageText: "git flume complete [WORD...]",
		// The words are a command line being typed, flags and all.
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			words := c.Args().Slice()
			var args []string
			for _, w := range words {
				if !strings.HasPrefix(w, "-") {
					args = append(args, w)
				}
			}
			cmds := c.App.Commands
			if len(args) == 0 {
				for _, cmd := range cmds {
					if !cmd.Hidden {
						fmt.Fprintln(a.io.Out, cmd.Name)
					}
				}
				return nil
			}
			for _, cmd := range cmds {
				if cmd.Name != args[0] {
					continue
				}
				if len(cmd.Subcommands) > 0 && len(args) == 1 {
					for _, sub := range cmd.Subcommands {
						if !sub.Hidden {
							fmt.Fprintln(a.io.Out, sub.Name)
						}
					}
					return nil
				}
				if slices.Contains(placeCommands, cmd.Name) && len(args) == 1 {
					st, err := stage.ReadPlaceNames(c.Context, a.stageEnv(), ".")
					if err != nil {
						return nil // nothing to offer outside a repository
					}
					for _, id := range st {
						fmt.Fprintln(a.io.Out, id)
					}
				}
			}
			return nil
		},
	}
}
