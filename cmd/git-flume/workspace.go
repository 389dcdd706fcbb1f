package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/internal/jsonfmt"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/promote"
	"github.com/git-flume/git-flume/promote/request"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/report"
)

func (a *app) promoteEnv() *promote.Env {
	o := a.engineOptions()
	// A workspace's worker runs in tmux (or the operator's terminal),
	// whatever host places use: its record names no pane host, so every
	// command must look for it in the same one.
	pane := o.Pane
	if pane != "print" {
		pane = "tmux"
	}
	return &promote.Env{
		Runner: a.runner, Kinds: recordKinds, Host: a.host(), Now: a.now, Clock: clockHook, Fault: faultHook, CallerEnv: a.env.list,
		Pane: pane, Panes: a.paneHost(pane), Print: a.io.Out, Out: a.io.Err,
		ConfirmWindow: o.ConfirmWindow, Interval: a.watchInterval(), StartObserver: a.startObserver, Sandbox: o.Sandbox,
		Program: func(root, name string) (agent.Program, error) {
			return a.workspaceProgram(context.Background(), root, name)
		},
	}
}

// workspaceProgram resolves a worker's program by name, from the built-in
// ones and those the user's and the workspace's .flume/config declare.
func (a *app) workspaceProgram(ctx context.Context, root, name string) (agent.Program, error) {
	cfg, err := stage.LoadFiles(ctx, a.runner, a.userConfig(), filepath.Join(root, ".flume", "config"))
	if err != nil {
		return agent.Program{}, err
	}
	prog, err := agent.ResolveProgram(name, cfg.Agents)
	if err != nil {
		return agent.Program{}, usageError{err}
	}
	return prog, nil
}

// workspaceRoot is the workspace root: --root, else the working directory.
func workspaceRoot(c *cli.Context) (string, error) {
	root := c.String("root")
	if root == "" {
		return os.Getwd()
	}
	return filepath.Abs(root)
}

func idFlag() cli.Flag {
	return &cli.StringFlag{Name: "id", Required: true, Usage: "the request's id"}
}

func rootFlag() cli.Flag {
	return &cli.StringFlag{Name: "root", Usage: "the workspace root (default: the working directory)", TakesFile: true}
}

func expectedFlag() cli.Flag {
	return &cli.StringFlag{Name: "expected", Required: true, TakesFile: true,
		Usage: "a file (or - for stdin) with the complete map you confirm: repository → {branch, commit, indexTree, committedTree}"}
}

func (a *app) readExpected(c *cli.Context) (promote.Expected, error) {
	var data []byte
	var err error
	if p := c.String("expected"); p == "-" {
		data, err = io.ReadAll(a.io.In)
	} else {
		data, err = os.ReadFile(p)
	}
	if err != nil {
		return nil, usagef("--expected: %v", err)
	}
	return promote.ParseExpected(data)
}

func workspaceCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:  "workspace",
		Usage: "change several repositories with one worker, check, stage, validate and promote them serially; or work in them directly",
		Description: "Run from a workspace root: a folder, not a repository, whose direct children are the repositories " +
			"a request selects. Promotion is serial and not atomic: each repository's intent is saved before it moves and " +
			"its receipt before the next one moves; after an interruption run reconcile, then promote again. " +
			"A request of mode \"direct\" runs its tasks one after another in the checkouts themselves, reserving the workspace " +
			"and every selected checkout while it writes; it ends with a change report (or a stale-read warning) per repository.",
		Subcommands: []*cli.Command{
			workspaceStartCommand(a),
			workspaceStatusCommand(a),
			workspaceVerb(a, "stage", "select the checked candidates and make an integration worktree in every repository", true, promote.StageWorkspace),
			workspaceVerb(a, "validate", "run the final checks on the staged tips", true, promote.Validate),
			workspaceVerb(a, "promote", "move every main branch to its validated tip, serially, with a receipt each", true, promote.PromoteWorkspace),
			workspaceReconcileCommand(a),
			workspaceVerb(a, "abort", "end the worker and stop the request; all git work is retained", false, promote.Abort),
			workspaceVerb(a, "cleanup", "remove a fully promoted request's worktrees, branches and input copies", false, promote.Cleanup),
			workspaceObserveCommand(a),
		},
	}
}

func workspaceStartCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "start",
		Usage:     "validate a request, make the worker worktrees and start the worker",
		UsageText: "git flume workspace start [--agent PROGRAM] [--max DURATION] [--idle DURATION] [--detach] [--root DIR] [--json] REQUEST.json",
		Description: "The worker's prompt is confirmed in its own transcript. Without --detach, start follows the worker " +
			"until its turn is done, then runs the task checks and prints the status; with --detach a background observer does.",
		Flags: []cli.Flag{rootFlag(), jsonFlag(),
			&cli.StringFlag{Name: "agent", Usage: "the worker's program: claude, codex, pi or one declared in .flume/config (default: $FLUME_AGENT, else claude)"},
			&cli.DurationFlag{Name: "max", Usage: "the worker's maximum runtime (default 45m)"},
			&cli.DurationFlag{Name: "idle", Usage: "how long the worker's transcript may stay quiet (default 15m)"},
			&cli.BoolFlag{Name: "detach", Usage: "return once the worker started; a background observer follows it"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("workspace start: one request file (or -) expected")
			}
			root, err := workspaceRoot(c)
			if err != nil {
				return err
			}
			var data []byte
			if p := c.Args().First(); p == "-" {
				data, err = io.ReadAll(a.io.In)
			} else {
				data, err = os.ReadFile(p)
			}
			if err != nil {
				return usagef("request: %v", err)
			}
			name := agent.ProgramName(c.String("agent"), a.env.vars["FLUME_AGENT"])
			prog, err := a.workspaceProgram(c.Context, root, name)
			if err != nil {
				return err
			}
			limits := request.Limits{MaxMs: c.Duration("max").Milliseconds(), IdleMs: c.Duration("idle").Milliseconds()}
			ws, err := promote.StartRequest(c.Context, a.promoteEnv(), root, data, promote.StartOptions{Program: prog, Limits: limits, Detach: c.Bool("detach")})
			if err != nil {
				return err
			}
			return a.printWorkspace(c, root, ws.ID, !c.Bool("detach"))
		},
	}
}

// printWorkspace prints the request's status; settled, a request that did
// not deliver exits 1.
func (a *app) printWorkspace(c *cli.Context, root, id string, settled bool) error {
	st, err := promote.ReadStatus(c.Context, a.promoteEnv(), root, id)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if err := jsonfmt.Write(a.io.Out, st); err != nil {
			return err
		}
	} else {
		report.WriteWorkspace(a.io.Out, st)
	}
	if settled {
		switch st.Phase {
		case request.PhaseFailed, request.PhaseBlocked, "manual":
			return silentExit{exitError}
		}
	}
	return nil
}

func workspaceStatusCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show a request as its repositories record it, changing nothing",
		UsageText: "git flume workspace status --id ID [--root DIR] [--json]",
		Flags:     []cli.Flag{idFlag(), rootFlag(), jsonFlag()},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			root, err := workspaceRoot(c)
			if err != nil {
				return err
			}
			return a.printWorkspace(c, root, c.String("id"), false)
		},
	}
}

func workspaceVerb(a *app, name, usage string, expected bool, do func(context.Context, *promote.Env, promote.RequestOptions) (*promote.Workspace, error)) *cli.Command {
	flags := []cli.Flag{idFlag(), rootFlag(), jsonFlag()}
	text := "git flume workspace " + name + " --id ID [--root DIR] [--json]"
	if expected {
		flags = append(flags, expectedFlag())
		text = "git flume workspace " + name + " --id ID --expected FILE [--root DIR] [--json]"
	}
	return &cli.Command{
		Name: name, Usage: usage, UsageText: text, Flags: flags,
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			root, err := workspaceRoot(c)
			if err != nil {
				return err
			}
			o := promote.RequestOptions{Root: root, ID: c.String("id")}
			if expected {
				if o.Expected, err = a.readExpected(c); err != nil {
					return err
				}
			}
			if _, err := do(c.Context, a.promoteEnv(), o); err != nil {
				return err
			}
			return a.printWorkspace(c, root, c.String("id"), true)
		},
	}
}

func workspaceReconcileCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "reconcile",
		Usage:     "settle an interrupted worker observation, staging or promotion from evidence, replaying nothing",
		UsageText: "git flume workspace reconcile --id ID [--root DIR] [--json]",
		Flags:     []cli.Flag{idFlag(), rootFlag(), jsonFlag()},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			root, err := workspaceRoot(c)
			if err != nil {
				return err
			}
			out, err := promote.ReconcileWorkspace(c.Context, a.promoteEnv(), promote.RequestOptions{Root: root, ID: c.String("id")})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return jsonfmt.Write(a.io.Out, map[string]any{"schema": promote.StatusSchema, "id": c.String("id"), "members": out})
			}
			for _, o := range out {
				line := fmt.Sprintf("%s: %s", o.Member, o.State)
				if o.Reason != "" {
					line += ": " + o.Reason
				}
				fmt.Fprintln(a.io.Out, line)
			}
			return nil
		},
	}
}

func workspaceObserveCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:   "observe",
		Hidden: true,
		Usage:  "follow a request's worker until it settles (started by start --detach)",
		Flags:  []cli.Flag{idFlag(), rootFlag()},
		Action: func(c *cli.Context) error {
			root, err := workspaceRoot(c)
			if err != nil {
				return err
			}
			_, err = promote.Observe(c.Context, a.promoteEnv(), root, c.String("id"), false)
			var nf *promote.NotFoundError
			if errors.As(err, &nf) {
				return nil
			}
			return err
		},
	}
}

// startObserver starts a detached observer for a request's worker.
func (a *app) startObserver(root, id string) {
	if err := proc.Detach([]string{"workspace", "observe", "--root", root, "--id", id}, root, stage.BackgroundEnv(a.env.list)); err != nil {
		a.warn("could not start the request's observer; git flume workspace reconcile observes it", "id", id, "err", err)
	}
}
