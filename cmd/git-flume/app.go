package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/log"
	"github.com/urfave/cli/v2"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/broker"
	"github.com/git-flume/git-flume/agents/launchfile"
	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/cliargs"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/land"
	"github.com/git-flume/git-flume/promote"
	"github.com/git-flume/git-flume/promote/request"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/runenv"
)

// version is set at build time with -ldflags "-X main.version=…".
var version string

// Exit codes, documented in the README.
const (
	exitOK       = 0
	exitError    = 1 // an error, or fsck found a problem
	exitUsage    = 2 // bad flags, arguments or names
	exitConflict = 3 // lost a compare-and-swap race after every retry
	exitRefused  = 4 // a gate refused: the place exists, or another session claims it
)

// streams is where a command reads and writes.
type streams struct {
	In       io.Reader
	Out, Err io.Writer
	// Raw are Out and Err as the process got them, for what must reach
	// the terminal untouched: a tmux client attached to a pane, the MCP
	// server's protocol. Everything else writes through Out and Err, which
	// escape what a terminal would act on (term.Writer).
	RawOut, RawErr io.Writer
}

// escaped is s with Out and Err escaping what a terminal would act on:
// a record, a transcript or a remote may hold escape sequences, and no
// print of one may reach the terminal as control (R5, R7). Flush the
// returned function at the end.
func (s *streams) escaped() func() {
	s.RawOut, s.RawErr = s.Out, s.Err
	out, errw := term.NewWriter(s.Out), term.NewWriter(s.Err)
	s.Out, s.Err = out, errw
	// Flushing to the terminal: a write that fails there has no one
	// left to tell (as for every print; see .golangci.yml).
	return func() { _ = out.Flush(); _ = errw.Flush() }
}

// env is what the command layer reads from the process environment; lower
// layers get it through options, never from os.Getenv.
type env struct {
	vars map[string]string
	list []string
}

func newEnv(list []string) env {
	e := env{vars: map[string]string{}, list: list}
	for _, kv := range list {
		k, v, _ := strings.Cut(kv, "=")
		e.vars[k] = v
	}
	return e
}

// usageError marks an error as the caller's: exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// silentExit ends the program with a code after the command printed its own
// report (fsck found problems).
type silentExit struct{ code int }

func (e silentExit) Error() string { return fmt.Sprintf("exit %d", e.code) }

// app holds what every command shares.
type app struct {
	io  *streams
	env env
	// warn logs a warning to Err; its logger is made at the first (its
	// styles cost a command that warns of nothing a third of its start).
	warn   func(msg string, keyvals ...any)
	runner *git.Runner
	// unknown is set when the command line named no known command.
	unknown bool
	// repoDir is the repository the command's --repo names ("." when it
	// has none); settings come from there.
	repoDir      string
	settingsOnce sync.Once
	set          settings
	// tmux is this process's one tmux pane host (paneHost).
	tmuxOnce sync.Once
	tmux     *agent.Tmux
}

func (a *app) now() time.Time {
	// FLUME_NOW fixes the clock (RFC 3339) so tests are reproducible.
	if s := a.env.vars["FLUME_NOW"]; s != "" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t
		}
	}
	return time.Now()
}

// recordKinds are every record kind git-flume reads and writes, wired
// here once from the packages that own them.
var recordKinds = refs.Kinds{refs.ClaimKind, record.PlaceKind, runenv.LeaseKind, request.WorkspaceKind, request.ReservationKind, land.EntryKind, record.HostKind}

// store opens the state store of the repository containing dir.
func (a *app) store(ctx context.Context, dir string) (*refs.Store, error) {
	repo, err := a.runner.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	s := refs.New(repo, recordKinds)
	s.Now = a.now
	return s, nil
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
}

func newApp(a *app) *cli.App {
	app := &cli.App{
		Name:                      "git-flume",
		HelpName:                  "git flume",
		Usage:                     "run coding agents in places of their own, with all state in git",
		Version:                   buildVersion(),
		HideVersion:               true,
		Reader:                    a.io.In,
		Writer:                    a.io.Out,
		ErrWriter:                 a.io.Err,
		DisableSliceFlagSeparator: true,
		// All exiting happens in run: urfave must not call os.Exit.
		ExitErrHandler: func(*cli.Context, error) {},
		Description: "git-flume keeps every record as JSON in a commit chain under refs/flume/, " +
			"moved by compare-and-swap. Exit codes: 0 success, 1 error (or fsck found a problem), " +
			"2 usage, 3 lost a race after every retry, 4 refused (the place exists, or another session claims it).",
		Commands:     a.commands(),
		OnUsageError: func(_ *cli.Context, err error, _ bool) error { return usageError{err} },
		CommandNotFound: func(c *cli.Context, name string) {
			a.unknown = true
			help, cmds := "git flume -h", c.App.Commands
			if c.Command != nil && c.Command.Name != "" && c.Command.Name != c.App.Name {
				help, cmds = "git flume "+c.Command.Name+" -h", c.Command.Subcommands
			}
			see := "see '" + help + "'"
			if meant := cliargs.Closest(cmds, name); meant != "" {
				see = fmt.Sprintf("did you mean %q? see '%s'", meant, strings.Replace(help, "-h", meant+" -h", 1))
			}
			fmt.Fprintf(a.io.Err, "git-flume: unknown command %q; %s\n", name, see)
		},
	}
	a.noteRepo(app.Commands)
	cliargs.UsageErrors(app.Commands, "git flume", usagef)
	return app
}

// commands are git flume's commands in the order help lists them; those
// that change records sync afterwards when flume.autosync is on.
func (a *app) commands() []*cli.Command {
	return []*cli.Command{
		a.withAutoSync(launchCommand(a)),
		statusCommand(a),
		boardCommand(a),
		a.viaRunner(envCommand(a)),
		conflictsCommand(a),
		landOrderCommand(a),
		a.viaRunner(explainCommand(a)),
		a.withAutoSync(useCommand(a)),
		a.withAutoSync(releaseCommand(a)),
		a.withAutoSync(a.viaRunner(tellCommand(a))),
		a.viaRunner(attachCommand(a)), resumeCommand(a),
		a.withAutoSync(a.viaRunner(stopCommand(a))),
		a.withAutoSync(a.viaRunner(retryCommand(a))),
		a.withAutoSync(a.viaRunner(goOnCommand(a))),
		waitCommand(a),
		advanceCommand(a),
		a.withAutoSync(rollbackCommand(a)),
		a.withAutoSync(acceptCommand(a)),
		a.withAutoSync(reopenCommand(a)),
		a.withAutoSync(unblockCommand(a)),
		a.withAutoSync(a.viaRunner(dropCommand(a))),
		a.withAutoSync(tidyCommand(a)),
		a.withAutoSync(a.viaRunner(submitCommand(a))),
		a.withAutoSync(landCommand(a)),
		a.withAutoSync(a.viaRunner(approveCommand(a))),
		a.withAutoSync(adoptCommand(a)),
		runHereCommand(a),
		installCommand(a),
		hookCommand(a),
		watchCommand(a),
		guardCommand(a),
		// One hook event of a Claude Code run, stamped with the wall clock its transcript is held against.
		{Name: "agent-event", Hidden: true, UsageText: "git flume agent-event --log FILE", Usage: "record one hook event of a place's agent in its run's events file",
			Flags: []cli.Flag{&cli.StringFlag{Name: "log", Required: true}}, Action: func(c *cli.Context) error { return agentrun.RecordEvent(a.io.In, c.String("log"), time.Now()) }},
		logCommand(a),
		costCommand(a),
		exportCommand(a),
		syncCommand(a),
		mcpCommand(a),
		completeCommand(a),
		workspaceCommand(a),
		herdrPluginCommand(a),
		fsckCommand(a),
		doctorCommand(a),
		versionCommand(a),
		manCommand(a),
	}
}

// run is the program: it returns the exit code.
func run(ctx context.Context, args []string, io *streams, environ []string) int {
	if launchfile.Launcher(args) {
		err := launchfile.Become(args)
		fmt.Fprintf(io.Err, "git-flume: %v\n", err)
		return exitLaunch
	}
	if inbox := broker.Inbox(environ, args[1:]); inbox != "" {
		// A12: a sandboxed agent's delegation verb runs in its watcher.
		dir, _ := os.Getwd()
		return broker.Forward(ctx, inbox, args[1:], dir, io.Out, io.Err)
	}
	defer io.escaped()()
	e := newEnv(environ)
	logger := sync.OnceValue(func() *log.Logger {
		return log.NewWithOptions(io.Err, log.Options{Prefix: "git-flume", ReportTimestamp: false})
	})
	warn := func(msg string, keyvals ...any) { logger().Warn(msg, keyvals...) }
	a := &app{io: io, env: e, warn: warn, repoDir: ".", runner: &git.Runner{Env: environ, OpenOnce: true}}
	cliApp := newApp(a)
	err := cliApp.RunContext(ctx, cliargs.FlagsFirst(cliApp.Commands, args))
	if a.unknown {
		return exitUsage
	}
	return exitCode(io.Err, err)
}

// exitCode maps an error to the documented exit codes and prints it. It is
// the one place errors become codes.
func exitCode(w io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	var silent silentExit
	if errors.As(err, &silent) {
		return silent.code
	}
	fmt.Fprintf(w, "git-flume: %v\n", err)
	var (
		usage    usageError
		name     *refs.NameError
		kind     *stage.UnknownKindError
		conflict *refs.ConflictError
		exists   *place.ExistsError
		claimed  *refs.ClaimedError
		refused  *stage.RefusedError
		wsBad    *request.InvalidError
		wsRefuse *promote.RefusedError
		unchosen *stage.RemoteUnchosenError
		lost     *stage.LostError
	)
	switch {
	case errors.As(err, &usage), errors.As(err, &name), errors.As(err, &kind), errors.As(err, &wsBad), errors.As(err, &unchosen):
		return exitUsage
	case errors.As(err, &exists), errors.As(err, &claimed), errors.As(err, &refused), errors.As(err, &wsRefuse):
		return exitRefused
	case errors.As(err, &conflict), errors.As(err, &lost):
		return exitConflict
	}
	return exitError
}

// noArgs refuses stray arguments: urfave stops parsing flags at the first
// argument, so a flag written after one would be silently ignored.
func noArgs(c *cli.Context) error {
	if c.Args().Present() {
		return usagef("%s takes no argument: unexpected %q", c.Command.Name, c.Args().First())
	}
	return nil
}

func repoFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "repo", Value: ".", Usage: "the repository (any directory inside it)", TakesFile: true}
}

func jsonFlag() *cli.BoolFlag {
	return &cli.BoolFlag{Name: "json", Usage: "print a versioned JSON document"}
}
