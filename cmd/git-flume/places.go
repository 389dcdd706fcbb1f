package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/urfave/cli/v2"

	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/cliargs"
	"github.com/git-flume/git-flume/internal/jsonfmt"
	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/board"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/report"
)

// stageEnv is what stage operations get from the command layer.
func (a *app) stageEnv() *stage.Env {
	return &stage.Env{
		Runner:       a.runner,
		Kinds:        recordKinds,
		Host:         a.host(),
		PID:          os.Getpid(),
		Now:          a.now,
		Clock:        clockHook,
		CallerEnv:    a.env.list,
		UserConfig:   a.userConfig(),
		Out:          a.io.Err,
		Engine:       a.engineOptions(),
		Fault:        faultHook,
		StartWatcher: a.startWatcher,
	}
}

// userConfig is the user-level flume config file.
func (a *app) userConfig() string {
	if x := a.env.vars["XDG_CONFIG_HOME"]; x != "" {
		return filepath.Join(x, "flume", "config")
	}
	if h := a.env.vars["HOME"]; h != "" {
		return filepath.Join(h, ".config", "flume", "config")
	}
	return ""
}

func sessionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "session", Usage: "the calling session's id (default: $FLUME_SESSION; else the working directory is the key)"},
		&cli.IntFlag{Name: "pid", Usage: "the calling session's process (default: $FLUME_SESSION_PID, else the nearest ancestor that is not git)"},
	}
}

func takeOverFlag() cli.Flag {
	return &cli.BoolFlag{Name: "take-over", Usage: "act even though another live session claims the place"}
}

// session identifies the caller for claims and gates (R8): `sid:<id>` when a
// session id is named, else `cwd:<dir>`.
func (a *app) session(c *cli.Context) (refs.Session, error) {
	return a.sessionOf(c.String("session"), c.Int("pid"))
}

// sessionOf is the calling session (refs.CallerSession), a session named
// inside an agent's process tree that is not the agent's refused as a
// usage error.
func (a *app) sessionOf(sid string, pid int) (refs.Session, error) {
	s, err := refs.CallerSession(a.host(), sid, pid, a.env.vars)
	var foreign *refs.ForeignSessionError
	if errors.As(err, &foreign) {
		return s, usagef("--session %s: this command runs inside the agent of session %s and acts only as that session (R8)", term.Clean(foreign.Named), term.Clean(foreign.Agent))
	}
	return s, err
}

// callerSession is the calling session as sessionOf finds it when no
// session or pid is named (the MCP server's tools), which never fails.
func (a *app) callerSession() refs.Session {
	s, _ := a.sessionOf("", 0) // an error needs a named session
	return s
}

// onePlace takes the single PLACE argument.
func onePlace(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", usagef("%s: want exactly one PLACE (<kind>--<name> or <kind>/<name>), got %d arguments", c.Command.Name, c.NArg())
	}
	return record.PlaceID(c.Args().First())
}

func launchCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "launch",
		Usage:     "make a place for a piece of work and start its kind's first stage",
		UsageText: "git flume launch --kind K [--name N] (--brief TEXT | --brief-file F) [--pane tmux|herdr|print|none] [--agent PROGRAM] [--repo DIR] [--from REV] [--target BRANCH] [--on RUNNER] [--json]",
		Description: "Makes <repo>/places/<kind>--<name> on a new branch <kind>/<name> from --from (default: the target's tip), " +
			"records it under refs/flume/places/, and runs the repository's readying steps from .flume/config there. " +
			"An existing place, path or branch is refused: flume never adopts what it did not make.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "kind", Required: true, Usage: "the kind of work: fix, change, question, or one declared in .flume/config"},
			&cli.StringFlag{Name: "name", Usage: "the place's name: lowercase [a-z0-9][a-z0-9._-]* (default: made from the brief's first words)"},
			&cli.StringFlag{Name: "brief", Usage: "what the work is, as text (stored byte for byte, never through a shell)"},
			&cli.StringFlag{Name: "brief-file", Usage: "read the brief from a file (- for standard input)", TakesFile: true},
			repoFlag(),
			&cli.StringFlag{Name: "from", Usage: "the revision the branch starts from (default: the target's tip)"},
			&cli.StringFlag{Name: "target", Usage: "the branch the work lands on (default: the branch the main checkout is on)"},
			&cli.StringFlag{Name: "agent", Usage: "the agent program for the stages: claude, codex, pi, or one declared in .flume/config (default $FLUME_AGENT, else claude)"},
			&cli.StringFlag{Name: "pane", Usage: "where the agent runs: tmux, herdr, print (flume prints the command to run), none (start no agent yet) (default $FLUME_PANE, else herdr when run inside herdr, else tmux)"},
			&cli.StringFlag{Name: "on", Usage: "make the place on this runner ([runner \"NAME\"] in .flume/config or your config), through the shared remote"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			brief, err := cliargs.Brief(c, usagef, a.io.In)
			if err != nil {
				return err
			}
			in := launchInput{Repo: c.String("repo"), Kind: c.String("kind"), Name: c.String("name"), Brief: brief,
				From: c.String("from"), Target: c.String("target"), Agent: c.String("agent"), JSON: c.Bool("json")}
			if c.IsSet("pane") {
				in.Pane = c.String("pane")
			}
			if on := c.String("on"); on != "" {
				return a.launchOn(c.Context, in, on)
			}
			return a.launch(c.Context, in, a.io.Out, a.io.Err)
		},
	}
}

// launchInput is what launch is asked, from its flags or an MCP call.
type launchInput struct {
	Repo, Kind, Name, Brief, From, Target, Agent string
	Pane                                         string // "" keeps $FLUME_PANE
	JSON                                         bool
}

// launch makes a place and starts its first stage (place.Launch), then
// prints it to out: the place's status document with JSON, else a line
// for people; a printed agent command goes to errOut with JSON.
func (a *app) launch(ctx context.Context, in launchInput, out, errOut io.Writer) error {
	env := a.stageEnv()
	if in.Pane != "" {
		env.Engine.Pane = in.Pane
		env.Engine.Panes = a.paneHost(env.Engine.Pane)
	}
	switch env.Engine.Pane {
	case "", "tmux", "herdr", "print", "none":
	default:
		return usagef("launch: --pane must be tmux, herdr, print or none")
	}
	name := in.Name
	if name == "" {
		if name = place.NameFromBrief(in.Brief); name == "" {
			return usagef("launch: --name is needed: the brief has no word to make one from")
		}
	}
	if in.JSON {
		// The printed command must not mix with the document.
		env.Engine.Print = errOut
	}
	r, err := env.OpenRepository(ctx, in.Repo)
	if err != nil {
		return err
	}
	p, err := place.New(r).Launch(ctx, place.LaunchOptions{
		Kind: in.Kind, Name: name, Brief: in.Brief,
		From: in.From, Target: in.Target, Agent: in.Agent,
	})
	if p == nil {
		return err
	}
	// The host's index of repositories (status --host) learns this one
	// the first time a place is launched in it.
	if ierr := stage.IndexRepository(ctx, a.runner, p.Repo, a.settings(ctx).Repositories); ierr != nil {
		a.warn("could not add the repository to this host's index; status --host will not list it", "repo", p.Repo, "err", ierr)
	}
	// A place whose readying failed is still made: show it, then report
	// the failure.
	if in.JSON {
		st, serr := report.ReadStatus(ctx, a.stageEnv(), report.StatusOptions{Repo: in.Repo, Place: p.ID})
		if serr != nil {
			return serr
		}
		if werr := jsonfmt.Write(out, map[string]any{"schema": 1, "place": st.Places[0]}); werr != nil {
			return werr
		}
	} else {
		a.printLaunched(ctx, in.Repo, p, out)
	}
	if r := p.Ready; err == nil && r != nil && !r.OK {
		what := "a fix goes on, told of the failure"
		if p.PlaceKind != "fix" {
			what = "its stage waits until the place is ready"
		}
		a.warn("readying failed; "+what, "place", p.ID, "step", r.Step, "exit", r.Exit)
	}
	return err
}

// printLaunched says what a launch made (report.WriteLaunched), with what
// moves its first stage on when it waits for someone.
func (a *app) printLaunched(ctx context.Context, repo string, p *record.Place, out io.Writer) {
	next := ""
	switch p.Stages[p.Current].State {
	case agentrun.StateBlocked, agentrun.StateNeverStarted, agentrun.StateWaiting, agentrun.StateUnknown:
		if s, err := report.ReadStatus(ctx, a.stageEnv(), report.StatusOptions{Repo: repo, Place: p.ID}); err == nil {
			next = s.Places[0].Stage.Next
		}
	}
	report.WriteLaunched(out, p, next)
}

func statusCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "list places: stage, state, readying, claim, and what tidying kept",
		UsageText: "git flume status [--repo DIR | --host] [--all] [--json | --watch] [--wide] [PLACE]",
		Flags: []cli.Flag{
			repoFlag(), jsonFlag(),
			&cli.BoolFlag{Name: "all", Usage: "include tidied places"},
			&cli.BoolFlag{Name: "host", Usage: "every place of every repository this host launched places in"},
			&cli.BoolFlag{Name: "watch", Usage: "keep the table up to date: redrawn in place on a terminal, printed again when it changes otherwise"},
			&cli.BoolFlag{Name: "wide", Usage: "every note of a place on its line (the table fits 120 columns otherwise)"},
		},
		Action: func(c *cli.Context) error {
			opts := report.StatusOptions{Repo: c.String("repo"), All: c.Bool("all")}
			if c.Bool("host") {
				if c.NArg() > 0 || c.Bool("watch") || c.IsSet("repo") {
					return usagef("status: --host lists every repository: no PLACE, --repo or --watch")
				}
				return a.hostStatus(c.Context, c.Bool("all"), c.Bool("json"), c.Bool("wide"))
			}
			if c.NArg() > 1 {
				return usagef("status: at most one PLACE")
			}
			if c.NArg() == 1 {
				id, err := record.PlaceID(c.Args().First())
				if err != nil {
					return err
				}
				opts.Place = id
			}
			if c.Bool("watch") {
				if c.Bool("json") {
					return usagef("status: --watch and --json do not go together")
				}
				return board.WatchStatus(c.Context, board.Terminal{Out: a.io.Out, Raw: a.io.RawOut, TTY: isTerminal(a.io.RawOut)}, a.watchInterval(), c.Bool("wide"),
					func(ctx context.Context) (*report.Status, error) { return a.status(ctx, opts) })
			}
			st, err := a.status(c.Context, opts)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return report.WriteStatusJSON(a.io.Out, st)
			}
			return report.WriteStatusTable(a.io.Out, st, c.Bool("wide"), term.Columns(a.io.RawOut))
		},
	}
}

// hostStatus prints every repository of the host's index with its places
// (status --host): a table under each repository's path, or one JSON
// document. It reads only: it starts no watcher.
func (a *app) hostStatus(ctx context.Context, all, asJSON, wide bool) error {
	hs, err := board.ReadHost(ctx, a.stageEnv(), all)
	if err != nil {
		return err
	}
	if asJSON {
		return jsonfmt.Write(a.io.Out, hs)
	}
	return board.WriteHost(a.io.Out, hs, wide)
}

// status reads the places' status, as `status` and the MCP status tool
// show it, and starts a watcher for each place that needs one.
func (a *app) status(ctx context.Context, opts report.StatusOptions) (*report.Status, error) {
	env := a.stageEnv()
	st, err := report.ReadStatus(ctx, env, opts)
	if err != nil {
		return nil, err
	}
	report.EnsureWatchers(env, opts.Repo, st)
	return st, nil
}

func useCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "use",
		Usage:     "claim a place for the calling session",
		UsageText: "git flume use [--session ID] [--pid N] [--take-over] [--shared [--remote R]] [--repo DIR] PLACE",
		Flags:     append(gateFlags(), sharedFlags()...),
		Action: func(c *cli.Context) error {
			id, err := onePlace(c)
			if err != nil {
				return err
			}
			o, err := a.claimOptions(c, id)
			if err != nil {
				return err
			}
			ps, err := a.places(c.Context, c.String("repo"))
			if err != nil {
				return err
			}
			claim, err := ps.Use(c.Context, o)
			if err != nil {
				return err
			}
			if o.Remote != "" {
				fmt.Fprintf(a.io.Out, "%s claimed by %s (pid %d), held on %s\n", id, claim.Key, claim.PID, o.Remote)
				return nil
			}
			fmt.Fprintf(a.io.Out, "%s claimed by %s (pid %d)\n", id, claim.Key, claim.PID)
			return nil
		},
	}
}

// claimOptions reads use's and release's flags; --shared names the remote
// (--remote, else flume.remote, else origin).
func (a *app) claimOptions(c *cli.Context, id string) (place.ClaimOptions, error) {
	sess, err := a.session(c)
	if err != nil {
		return place.ClaimOptions{}, err
	}
	o := place.ClaimOptions{Place: id, Session: sess, TakeOver: c.Bool("take-over")}
	if c.Bool("shared") {
		remote, err := a.remote(c.Context, c.String("remote"))
		if err != nil {
			return o, err
		}
		o.Remote = remote
	}
	return o, nil
}

func releaseCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "release",
		Usage:     "release the calling session's claim on a place",
		UsageText: "git flume release [--session ID] [--pid N] [--take-over] [--shared [--remote R]] [--repo DIR] PLACE",
		Flags:     append(gateFlags(), sharedFlags()...),
		Action: func(c *cli.Context) error {
			id, err := onePlace(c)
			if err != nil {
				return err
			}
			o, err := a.claimOptions(c, id)
			if err != nil {
				return err
			}
			ps, err := a.places(c.Context, c.String("repo"))
			if err != nil {
				return err
			}
			released, err := ps.Release(c.Context, o)
			if err == nil && !released {
				fmt.Fprintf(a.io.Out, "%s: no claim here to release\n", id)
			} else if err == nil {
				fmt.Fprintf(a.io.Out, "%s released\n", id)
			}
			return err
		},
	}
}

func dropCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "drop",
		Usage:     "mark a launch dropped: its work is over without landing",
		UsageText: "git flume drop [--tree] [--take-over] [--session ID] [--pid N] [--repo DIR] PLACE",
		Description: "Its running agent is ended and verified gone (one started by the operator from a printed command is " +
			"theirs to end). The next tidy removes the worktree and keeps a branch that holds unlanded commits. " +
			"--tree drops the place and every place delegated from it, deepest first, each agent verified gone before its commissioner's.",
		Flags: append(gateFlags(), &cli.BoolFlag{Name: "tree", Usage: "drop every place delegated from it too, deepest first"}),
		Action: func(c *cli.Context) error {
			po, err := a.placeArg(c)
			if err != nil {
				return err
			}
			id := po.Place
			ps, err := a.places(c.Context, po.Repo)
			if err != nil {
				return err
			}
			if !c.Bool("tree") {
				p, err := ps.Drop(c.Context, po)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.io.Out, "%s dropped%s; `git flume tidy` removes it\n", id, dropNote(p))
				return nil
			}
			done, err := ps.DropTree(c.Context, po)
			for _, d := range done {
				fmt.Fprintf(a.io.Out, "%s dropped%s\n", d.Place.ID, dropNote(d.Place))
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.io.Out, "%d place(s) dropped; `git flume tidy` removes them\n", len(done))
			return nil
		},
	}
}

// dropNote says what became of a dropped place's agent.
func dropNote(p *record.Place) string {
	a := p.Stages[p.Current].Agent
	switch {
	case a == nil:
		return ""
	case !a.Ended:
		return "; its agent, started by the operator, still runs: end it before tidy"
	case p.Stages[p.Current].Reason == place.DroppedReason:
		return "; its agent was ended and verified gone"
	}
	return ""
}

func tidyCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:      "tidy",
		Usage:     "remove the worktrees and branches of places whose work is over, never losing work",
		UsageText: "git flume tidy [--repo DIR] [--dry-run] [--json] [--take-over] [--session ID] [--pid N]",
		Description: "A place's work is over when its branch landed on its target (merged, rebased or squash-merged) or it was dropped. " +
			"Its worktree goes only if it is a clean, unlocked linked worktree under places/ on the place's branch; " +
			"its branch goes only if every patch landed, by compare-and-swap on the judged head. Everything kept is named.",
		Flags: append(gateFlags(), jsonFlag(),
			&cli.BoolFlag{Name: "dry-run", Usage: "say what would be done; change nothing"}),
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			dry := c.Bool("dry-run")
			gate, err := a.gate(c)
			if err != nil {
				return err
			}
			ps, err := a.places(c.Context, c.String("repo"))
			if err != nil {
				return err
			}
			results, err := ps.Tidy(c.Context, place.TidyOptions{DryRun: dry, Gate: gate})
			if results == nil {
				results = []place.TidyResult{}
			}
			if c.Bool("json") {
				if werr := jsonfmt.Write(a.io.Out, map[string]any{"schema": 1, "dryRun": dry, "places": results}); werr != nil {
					return werr
				}
			} else {
				report.WriteTidy(a.io.Out, results, dry)
			}
			if err == nil && !c.Bool("json") {
				err = a.tidyOnRunners(c)
			}
			if err == nil && !dry && slices.ContainsFunc(results, func(r place.TidyResult) bool { return r.Kept != "" }) {
				return silentExit{exitError} // T2: each kept place is named above
			}
			return err
		},
	}
}
