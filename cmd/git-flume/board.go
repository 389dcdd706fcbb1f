package main

import (
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/stage/board"
)

func boardCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "board",
		Usage:     "every place on this host as a numbered list, with keys to open, tell, stop, retry and launch (the herdr plugin's pane)",
		UsageText: "git flume board [--interval DURATION]",
		Description: "Reads the host's index as status --host does, and redraws every --interval. Type a key, a row " +
			"number and its words, then Enter: " + board.Keys + ". Each runs the git flume command of the same name " +
			"in the row's repository. A row that starts to need a person (waiting, blocked, stuck, never-started, cut) " +
			"sounds the terminal's bell once and is marked !. Inside herdr, open opens the agent's pane beside the board.",
		Flags: []cli.Flag{&cli.DurationFlag{Name: "interval", Value: 2 * time.Second, Usage: "how often the board is read again"}},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			return board.Run(c.Context, a.stageEnv(), board.Terminal{In: a.io.In, Out: a.io.Out, Raw: a.io.RawOut,
				TTY: isTerminal(a.io.RawOut)}, c.Duration("interval"), board.KeyRunner{In: a.io.In, RawOut: a.io.RawOut, RawErr: a.io.RawErr,
				Env: a.env.list, Herdr: a.env.vars["HERDR_BIN_PATH"]}.Do)
		},
	}
}

// isTerminal reports whether w is a terminal (the board then redraws in
// place).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

func herdrPluginCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "herdr-plugin",
		Usage:     "write git flume's herdr plugin (its board in a herdr pane) to a folder, and say how to link it",
		UsageText: "git flume herdr-plugin [--dir DIR]",
		Flags: []cli.Flag{&cli.StringFlag{Name: "dir", TakesFile: true,
			Usage: "where to write it (default: $XDG_DATA_HOME/flume/herdr-plugin)"}},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			dir, manifest, err := agent.WriteHerdrPlugin(a.env.vars, c.String("dir"))
			if err != nil {
				return err
			}
			fmt.Fprintf(a.io.Out, "wrote %s\nlink it:  herdr plugin link %s\nthen bind a key in herdr's config.toml and run herdr server reload-config:\n%s",
				manifest, dir, agent.HerdrKeys)
			return nil
		},
	}
}
