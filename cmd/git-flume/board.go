package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/stage/report"
)

func boardCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "board",
		Usage:     "every place on this host as a numbered list, with keys to open, tell, stop, retry and launch (the herdr plugin's pane)",
		UsageText: "git flume board [--interval DURATION]",
		Description: "Reads the host's index as status --host does, and redraws every --interval. Type a key, a row " +
			"number and its words, then Enter: " + report.BoardKeys + ". Each runs the git flume command of the same name " +
			"in the row's repository. A row that starts to need a person (waiting, blocked, stuck, never-started, cut) " +
			"sounds the terminal's bell once and is marked !. Inside herdr, open opens the agent's pane beside the board.",
		Flags: []cli.Flag{&cli.DurationFlag{Name: "interval", Value: 2 * time.Second, Usage: "how often the board is read again"}},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			return report.RunBoard(c.Context, a.stageEnv(), report.BoardTerminal{In: a.io.In, Out: a.io.Out, Raw: a.io.RawOut,
				TTY: isTerminal(a.io.RawOut)}, c.Duration("interval"), a.boardDo)
		},
	}
}

// boardDo runs a board command through git flume itself and says how it
// went: its output's last line, or its error.
func (a *app) boardDo(ctx context.Context, cmd report.BoardCommand) string {
	exe, err := os.Executable()
	if err != nil {
		return err.Error()
	}
	if cmd.Attach && cmd.Row.PaneHost == "herdr" {
		return fmt.Sprintf("%s runs in herdr pane %s: open it in herdr's sidebar", cmd.Row.Place, cmd.Row.Pane)
	}
	if bin := a.env.vars["HERDR_BIN_PATH"]; cmd.Attach && bin != "" {
		// Inside herdr: the agent's tmux pane opens in a pane of its own
		// beside the board (the plugin's attach pane).
		c := proc.Cmd{Path: bin, Args: []string{"plugin", "pane", "open", "--plugin", agent.HerdrPluginID, "--entrypoint", "attach",
			"--placement", "split", "--focus", "--env", "FLUME_BOARD_REPO=" + cmd.Row.Repo, "--env", "FLUME_BOARD_PLACE=" + cmd.Row.Place},
			Env: a.env.list}
		if _, err := proc.Output(ctx, c); err != nil {
			return fmt.Sprintf("open %s: %v", cmd.Row.Place, err)
		}
		return "opened " + cmd.Row.Place + " beside the board"
	}
	c := proc.Cmd{Path: exe, Args: cmd.Args, Dir: cmd.Row.Repo, Env: a.env.list}
	if cmd.Attach {
		c.Stdin, c.Stdout, c.Stderr = a.io.In, a.io.RawOut, a.io.RawErr
		if err := proc.Run(ctx, c); err != nil {
			return fmt.Sprintf("open %s: %v", cmd.Row.Place, err)
		}
		return "back from " + cmd.Row.Place
	}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err = proc.Run(ctx, c)
	// What a launch made is its first line; any other command's outcome
	// its last.
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	what, line := cmd.Args[0]+" "+cmd.Row.Place, lines[len(lines)-1]
	if cmd.Args[0] == "launch" {
		what, line = "launch in "+filepath.Base(cmd.Row.Repo), lines[0]
	}
	if err != nil && line == "" {
		line = err.Error()
	}
	return what + ": " + line
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
			dir := c.String("dir")
			if dir == "" {
				data := a.env.vars["XDG_DATA_HOME"]
				if data == "" {
					data = filepath.Join(a.env.vars["HOME"], ".local", "share")
				}
				dir = filepath.Join(data, "flume", "herdr-plugin")
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			manifest := filepath.Join(dir, "herdr-plugin.toml")
			if err := os.WriteFile(manifest, []byte(agent.HerdrManifest("0.1.0")), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(a.io.Out, "wrote %s\nlink it:  herdr plugin link %s\nthen bind a key in herdr's config.toml and run herdr server reload-config:\n%s",
				manifest, dir, agent.HerdrKeys)
			return nil
		},
	}
}
