package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/launchfile"
	"github.com/git-flume/git-flume/internal/jsonfmt"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/cost"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/guard"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/report"
	"github.com/git-flume/git-flume/stage/toollog"
)

// engineOptions are the engine's options as this process's environment
// sets them (stage.EngineOptionsFrom), with its pane hosts and output.
func (a *app) engineOptions() stage.EngineOptions {
	o := stage.EngineOptionsFrom(a.env.vars)
	o.Pane = agent.DefaultPane(a.env.vars)
	o.Panes, o.Hosts, o.Print, o.Export = a.paneHost(o.Pane), a.paneHost, a.io.Out, report.WriteExport
	return o
}

func gateFlags() []cli.Flag {
	return append(sessionFlags(), takeOverFlag(), repoFlag())
}

func (a *app) gate(c *cli.Context) (stage.GateOptions, error) {
	s, err := a.session(c)
	return stage.GateOptions{Session: s, TakeOver: c.Bool("take-over")}, err
}

func advanceCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:  "advance",
		Usage: "run the stage engine of one place (or every place) until nothing more moves",
		Description: "A stage that starts is followed until its prompt shows in the agent's transcript. " +
			"The post-commit hook runs this in the background after every commit in a place.",
		UsageText: "git flume advance [--tidy] [--repo DIR] [PLACE]",
		Flags: []cli.Flag{repoFlag(),
			&cli.BoolFlag{Name: "tidy", Usage: "then tidy, if a place's branch landed (the post-merge hook does this)"},
			&cli.BoolFlag{Name: "from-hook", Hidden: true, Usage: "run from a hook: record, start no agent"}},
		Action: func(c *cli.Context) error {
			gate, err := a.gate(c)
			if err != nil {
				return err
			}
			o := place.AdvanceOptions{FromHook: c.Bool("from-hook"), Tidy: c.Bool("tidy"), Gate: gate}
			if c.NArg() > 0 {
				id, err := onePlace(c)
				if err != nil {
					return err
				}
				o.Place = id
			}
			ps, err := a.places(c.Context, c.String("repo"))
			if err != nil {
				return err
			}
			done, err := ps.Advance(c.Context, o)
			if done == nil {
				return err
			}
			for _, p := range done.Places {
				st := p.Stages[p.Current]
				fmt.Fprintf(a.io.Out, "%s: %s (%d/%d) %s\n", p.ID, st.Name, p.Current+1, len(p.Stages), st.State)
			}
			if o.Tidy {
				report.WriteTidy(a.io.Out, done.Tidied, false)
			}
			return err
		},
	}
}

func waitCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "wait",
		Usage:     "block until the place's current stage ends or needs someone, and print how",
		UsageText: "git flume wait [--timeout D] [--json] [--repo DIR] PLACE",
		Flags: []cli.Flag{repoFlag(), jsonFlag(),
			&cli.DurationFlag{Name: "timeout", Value: time.Hour, Usage: "give up after this long (exit 1)"}},
		Action: func(c *cli.Context) error {
			id, r, err := a.placeRepo(c)
			if err != nil {
				return err
			}
			o, err := engine.Wait(c.Context, r, engine.WaitOptions{Place: id, Timeout: c.Duration("timeout")})
			if o != nil {
				if c.Bool("json") {
					if err := jsonfmt.Write(a.io.Out, map[string]any{"schema": 1, "outcome": o}); err != nil {
						return err
					}
				} else {
					report.WriteWaited(a.io.Out, o)
				}
			}
			return err
		},
	}
}

func tellCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:        "tell",
		Usage:       "send the place's agent a message, confirmed in its transcript",
		UsageText:   "git flume tell [--session ID] [--pid N] [--take-over] [--repo DIR] PLACE TEXT",
		Description: "Refused, with nothing typed, when the agent is not up or is waiting on its own question.",
		Flags:       gateFlags(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return usagef("tell: want PLACE and TEXT")
			}
			gate, err := a.gate(c)
			if err != nil {
				return err
			}
			o := engine.TellOptions{PlaceOptions: stage.PlaceOptions{Repo: c.String("repo"), Place: c.Args().Get(0), Gate: gate}, Text: c.Args().Get(1)}
			return a.tell(c.Context, o, a.io.Out)
		},
	}
}

// tell sends o.Text to o.Place's agent (stage.Tell, A4) and says so on
// out, for `tell` and the MCP tell tool. The place may be named as a
// path.
func (a *app) tell(ctx context.Context, o engine.TellOptions, out io.Writer) error {
	id, err := record.PlaceID(o.Place)
	if err != nil {
		return err
	}
	o.Place = id
	op, err := a.operator(ctx, o.Repo)
	if err != nil {
		return err
	}
	if err := op.Tell(ctx, o); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: message confirmed in the agent's transcript\n", id)
	return nil
}

func stopCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "stop",
		Usage:     "end the place's agent; fails unless it really exited",
		UsageText: "git flume stop [--force] [--session ID] [--pid N] [--take-over] [--repo DIR] PLACE",
		Flags:     append(gateFlags(), &cli.BoolFlag{Name: "force", Usage: "end an agent in the middle of a turn"}),
		Action: func(c *cli.Context) error {
			op, po, err := a.operatorArg(c)
			if err != nil {
				return err
			}
			id := po.Place
			if err := op.Stop(c.Context, po); err != nil {
				return err
			}
			fmt.Fprintf(a.io.Out, "%s: agent stopped\n", id)
			return nil
		},
	}
}

func attachCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "attach",
		Usage:     "attach this terminal to the pane of the place's agent, to see it and answer it there (detach: C-b d)",
		UsageText: "git flume attach [--repo DIR] PLACE",
		Description: "For an agent in tmux. A dialog flume will not type into (trust, permission, login) is answered here; " +
			"the stage goes on by itself once the prompt shows in the agent's transcript.",
		Flags: []cli.Flag{repoFlag()},
		Action: func(c *cli.Context) error {
			op, po, err := a.operatorArg(c)
			if err != nil {
				return err
			}
			return op.Attach(c.Context, po, agent.Terminal{In: a.io.In, Out: a.io.RawOut, Err: a.io.RawErr, Env: a.env.list})
		},
	}
}

func resumeCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "open an ended run's own session, with its history, in this terminal: read-only unless --write",
		UsageText: "git flume resume [--repo DIR] [--stage NAME] [--run N] [--write] PLACE",
		Flags: []cli.Flag{repoFlag(), &cli.StringFlag{Name: "stage", Usage: "the stage (default: the current one)"},
			&cli.IntFlag{Name: "run", Usage: "the run, from 1 (default: the last whose agent ended)"},
			&cli.BoolFlag{Name: "write", Usage: "let the session write the place, as the stage's agent could"}},
		Action: func(c *cli.Context) error {
			id, r, err := a.placeRepo(c)
			if err != nil {
				return err
			}
			return place.New(r).Resume(c.Context, place.ResumeOptions{Place: id, Stage: c.String("stage"), Run: c.Int("run"), Write: c.Bool("write")},
				agent.Terminal{In: a.io.In, Out: a.io.RawOut, Err: a.io.RawErr, Env: a.env.list})
		},
	}
}

func restartCommand(a *app, name, usage string, run func(*engine.Operator, context.Context, stage.PlaceOptions) (*record.Place, error)) *cli.Command {
	return &cli.Command{
		Name:      name,
		Usage:     usage,
		UsageText: "git flume " + name + " [--force] [--session ID] [--pid N] [--take-over] [--repo DIR] PLACE",
		Flags:     append(gateFlags(), &cli.BoolFlag{Name: "force", Usage: "end the running agent first"}),
		Action: func(c *cli.Context) error {
			op, po, err := a.operatorArg(c)
			if err != nil {
				return err
			}
			id := po.Place
			p, err := run(op, c.Context, po)
			if err != nil {
				return err
			}
			st := p.Stages[p.Current]
			if st.State == record.StagePending {
				// Nothing started it: this command starts no agents
				// (FLUME_PANE=none); say so, never "a fresh agent".
				fmt.Fprintf(a.io.Out, "%s: stage %s pending: no agent was started here (pane none); git flume advance %s starts it\n", id, st.Name, id)
				return nil
			}
			fmt.Fprintf(a.io.Out, "%s: stage %s %s with a fresh agent (run %d)\n", id, st.Name, st.State, st.Runs)
			return nil
		},
	}
}

// placeOptions are an operator verb's: the place, --repo, the session's
// gate (--session, --take-over) and --force where the verb has it.
// placeArg is a verb's one PLACE argument with the options every verb on
// a place takes.
func (a *app) placeArg(c *cli.Context) (stage.PlaceOptions, error) {
	id, err := onePlace(c)
	if err != nil {
		return stage.PlaceOptions{}, err
	}
	return a.placeOptions(c, id)
}

func (a *app) placeOptions(c *cli.Context, id string) (stage.PlaceOptions, error) {
	gate, err := a.gate(c)
	return stage.PlaceOptions{Repo: c.String("repo"), Place: id, Gate: gate, Force: c.Bool("force")}, err
}

func retryCommand(a *app) *cli.Command {
	return restartCommand(a, "retry", "start the current stage again with a fresh agent and its prompt", (*engine.Operator).Retry)
}

func goOnCommand(a *app) *cli.Command {
	return restartCommand(a, "go-on", "run a question's round again with a fresh agent", (*engine.Operator).GoOn)
}

func installCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "install",
		Usage:     "install the hooks: post-commit ends stages on commit, post-merge notices landings and tidies",
		UsageText: "git flume install [--repo DIR]",
		Description: "Honours core.hooksPath. A post-commit or post-merge hook already there is kept and still runs, after " +
			"flume's, which only starts its work in the background and never fails the commit or merge.",
		Flags: []cli.Flag{repoFlag()},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			ps, err := a.places(c.Context, c.String("repo"))
			if err != nil {
				return err
			}
			paths, err := ps.InstallHooks(c.Context)
			for _, p := range paths {
				fmt.Fprintf(a.io.Out, "installed %s\n", p)
			}
			return err
		},
	}
}

// hookCommand is what installed hooks call. It returns at once: outside a
// place it does nothing; in a place it starts `git flume advance` detached,
// so the commit never waits on agent work (K7).
func hookCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:   "hook",
		Hidden: true,
		Action: func(c *cli.Context) error {
			cwd, err := os.Getwd()
			if err != nil {
				return nil
			}
			args, dir := place.HookAdvance(c.Args().First(), cwd, a.env.vars["FLUME_SANDBOX"] == "landlock")
			if args == nil {
				return nil
			}
			// A hook's advance that cannot start is said, not lost;
			// the commit or merge itself stands.
			if err := proc.Detach(args, dir, stage.BackgroundEnv(a.env.list)); err != nil {
				fmt.Fprintf(a.io.Err, "git-flume: %s: could not start %v: %v; run git flume advance\n", c.Args().First(), args, err)
			}
			return nil
		},
	}
}

func watchCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:   "watch",
		Usage:  "keep a place's timers (started by other commands, detached)",
		Hidden: true,
		Flags:  []cli.Flag{repoFlag()},
		Action: func(c *cli.Context) error {
			id, err := onePlace(c)
			if err != nil {
				return err
			}
			ps, err := a.places(c.Context, c.String("repo"))
			if err != nil {
				return err
			}
			return ps.Watch(c.Context, id, a.watchInterval(), 12*time.Hour)
		},
	}
}

// startWatcher starts a detached watcher for a place (stage.Env's
// StartWatcher): any command that finds a place's watcher dead starts
// another, and its lease in the record keeps it to one. FLUME_WATCH=off
// starts none.
func (a *app) startWatcher(repoDir, id string) {
	if a.env.vars["FLUME_WATCH"] == "off" {
		return
	}
	abs, err := filepath.Abs(repoDir)
	if err != nil {
		return
	}
	if err := proc.Detach([]string{"watch", "--repo", abs, id}, abs, stage.BackgroundEnv(a.env.list)); err != nil {
		a.warn("could not start the place's watcher; any git flume command starts one", "place", id, "err", err)
	}
}

// watchInterval is how often a watcher advances its place:
// $FLUME_WATCH_INTERVAL, default 5s.
func (a *app) watchInterval() time.Duration {
	if d, err := time.ParseDuration(a.env.vars["FLUME_WATCH_INTERVAL"]); err == nil && d > 0 {
		return d
	}
	return 5 * time.Second
}

func rollbackCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:  "rollback",
		Usage: "restore a place exactly as its current stage started: branch, tracked, untracked and dirty files",
		Description: "What it replaces is kept first, in a snapshot under refs/flume/snapshots/<place>/ (and a .diff " +
			"in the place's log folder). The stage is then blocked until `retry` starts it again.",
		UsageText: "git flume rollback [--force | --delegation] [--session ID] [--pid N] [--take-over] [--repo DIR] PLACE",
		Flags: append(gateFlags(), &cli.BoolFlag{Name: "force", Usage: "end the running agent first"},
			&cli.BoolFlag{Name: "delegation", Usage: "undo a delegated place whole: its work, and its commissioner's branch and work tree as they were when it delegated"}),
		Action: func(c *cli.Context) error {
			po, err := a.placeArg(c)
			if err != nil {
				return err
			}
			id := po.Place
			if c.Bool("delegation") {
				v, err := a.delegationVerbs(c.Context, po.Repo)
				if err != nil {
					return err
				}
				p, err := v.Rollback(c.Context, po)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.io.Out, "%s: delegation rolled back; %s restored to %.12s\n", id, p.Parent.Parent, p.Base)
				report.WriteKept(a.io.Out, p)
				return nil
			}
			op, err := a.operator(c.Context, po.Repo)
			if err != nil {
				return err
			}
			p, kept, err := op.Rollback(c.Context, po)
			if err != nil {
				return err
			}
			st := p.Stages[p.Current]
			fmt.Fprintf(a.io.Out, "%s: stage %s rolled back to %.12s\n", id, st.Name, st.Base)
			if kept != nil {
				fmt.Fprintf(a.io.Out, "kept what was there in %s\n", kept.Ref)
			}
			return nil
		},
	}
}

func costCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "cost",
		Usage:     "tokens and cost of each stage's agent, from its transcript, with a grand total",
		UsageText: "git flume cost [--repo DIR] [--json] [PLACE]",
		Flags:     []cli.Flag{repoFlag(), jsonFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usagef("cost: at most one place")
			}
			id := ""
			if c.NArg() == 1 {
				var err error
				if id, err = onePlace(c); err != nil {
					return err
				}
			}
			costs, err := cost.Read(c.Context, a.stageEnv(), c.String("repo"), id)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return jsonfmt.Write(a.io.Out, costs)
			}
			return cost.Write(a.io.Out, costs)
		},
	}
}

func logCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "log",
		Usage:     "a place's live log: its readying output and every tool call of its agents, one line each",
		UsageText: "git flume log [-f] [--repo DIR] PLACE",
		Flags: []cli.Flag{repoFlag(),
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new lines as they come"}},
		Action: func(c *cli.Context) error {
			id, err := onePlace(c)
			if err != nil {
				return err
			}
			return toollog.CopyLog(c.Context, a.stageEnv(), c.String("repo"), id, a.io.Out, c.Bool("follow"), a.watchInterval())
		},
	}
}

func guardCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:   "guard",
		Hidden: true,
		Usage:  "judge one tool use of a place's agent (Claude Code PreToolUse hook): exit 2 refuses it",
		Description: "Reads the hook's JSON on standard input. A tool outside the stage role's tools, a write outside " +
			"the place, or a path a role's restriction denies is refused with the rule named on standard error.",
		UsageText: "git flume guard [--place PLACE] [--codex]",
		Flags: []cli.Flag{&cli.StringFlag{Name: "place", Usage: "the place (default: $FLUME_PLACE)"},
			&cli.BoolFlag{Name: "codex", Usage: "the payload is Codex's (apply_patch is judged as an Edit of each file it names)"}},
		Action: func(c *cli.Context) error {
			id := c.String("place")
			if id == "" {
				id = a.env.vars["FLUME_PLACE"]
			}
			var in guard.GuardInput
			err := json.NewDecoder(a.io.In).Decode(&in)
			if err == nil {
				err = guard.GuardPayload(c.Context, a.stageEnv(), id, in, c.Bool("codex"))
			}
			if err != nil {
				// Fail closed: a tool use the guard cannot judge is
				// refused (Claude Code blocks on exit 2 and shows stderr).
				fmt.Fprintln(a.io.Err, err)
				return silentExit{2}
			}
			return nil
		},
	}
}

func exportCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write one self-contained HTML page of a place: stages, prompts, deliverables, reports, costs, transcripts",
		UsageText: "git flume export [--repo DIR] [-o FILE] PLACE",
		Flags: []cli.Flag{repoFlag(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "the file to write (default: standard output)", TakesFile: true}},
		Action: func(c *cli.Context) error {
			id, err := onePlace(c)
			if err != nil {
				return err
			}
			out := a.io.Out
			if path := c.String("output"); path != "" {
				f, err := os.Create(path)
				if err != nil {
					return err
				}
				defer f.Close()
				out = f
			}
			return report.WriteExport(c.Context, a.stageEnv(), c.String("repo"), id, out)
		},
	}
}

// exitLaunch is the launcher's exit status when it could not start the
// agent: what a shell says of a command found but not runnable.
const exitLaunch = 126

// paneHost is where agents run: herdr panes for FLUME_PANE=herdr, else
// tmux, one per process: it remembers the panes it saw running, so a
// watcher's looks spawn nothing while they still run.
func (a *app) paneHost(pane string) agent.PaneHost {
	if pane == "herdr" {
		return agent.HerdrFrom(a.env.vars)
	}
	a.tmuxOnce.Do(func() {
		a.tmux = &agent.Tmux{Socket: a.env.vars["FLUME_TMUX_SOCKET"]}
		if exe, err := os.Executable(); err == nil {
			a.tmux.Launcher = []string{exe, launchfile.ExecCommand}
		}
	})
	return a.tmux
}

func explainCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "explain",
		Usage:     "say why a place's stage is in its state, from the evidence flume judged by, and what moves it on",
		UsageText: "git flume explain [--json] [--repo DIR] PLACE",
		Description: "The evidence is what the engine itself reads: the record's moves, the agent's transcript and screen, the " +
			"branch against the stage's base, the timers. It reads; it moves nothing.",
		Flags: []cli.Flag{repoFlag(), jsonFlag()},
		Action: func(c *cli.Context) error {
			po, err := a.placeArg(c)
			if err != nil {
				return err
			}
			x, err := report.Explain(c.Context, a.stageEnv(), po)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return jsonfmt.Write(a.io.Out, x)
			}
			report.WriteExplain(a.io.Out, x)
			return nil
		},
	}
}
