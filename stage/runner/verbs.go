package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/runenv"
)

// Stdio is the terminal a forwarded verb runs on.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
	// TTY asks for a terminal (attach): ssh -t, which also opens the
	// place's leased ports here for as long as it lasts (ssh -L); a
	// command runner's attach line when it has one.
	TTY bool
	// SayForwards has the verb's output end with a shell comment giving
	// the ssh command that opens the place's leased ports here (env).
	SayForwards bool
	// Shares: the verb moves records, which the runner then shares with
	// the remote in the same command (git flume sync), so that this
	// host's next sync brings them.
	Shares bool
}

// remoteLine is the shell line that runs git flume with args in a
// runner's clone: with shares, a sync follows, and the verb's exit
// status is the line's.
func remoteLine(args []string, shares bool) string {
	line := "git flume " + strings.Join(quoted(args), " ")
	if shares {
		line += "; s=$?; git flume sync >/dev/null 2>&1; exit $s"
	}
	return line
}

// verbArgv is how runner run runs git flume with args for place p (M3):
// over ssh in its clone, or through a command runner's exec line (its
// attach line, for a terminal, when it has one) with {command} the whole
// line as one shell word. A command runner with no such line cannot be
// reached, and refuses.
func verbArgv(run stage.RunnerDecl, p *record.Place, args []string, io Stdio, local map[int]int) ([]string, error) {
	line := remoteLine(args, io.Shares)
	if run.Kind == "ssh" {
		argv, err := sshArgv(run, line, io.TTY)
		if io.TTY && p != nil {
			argv = withForwards(argv, p, local)
		}
		return argv, err
	}
	exec := run.Exec
	if io.TTY && run.Attach != "" {
		exec = run.Attach
	}
	if exec == "" {
		return nil, &stage.RefusedError{Place: p.ID, Reason: fmt.Sprintf("it is on host %s through command runner %s, which declares no exec line "+
			"([runner %q] exec = a line that runs {command} where its places live): nothing here reaches it", p.Host, run.Name, run.Name)}
	}
	return []string{"/bin/sh", "-c", strings.NewReplacer("{command}", agent.ShellQuote(line), "{place}", agent.ShellQuote(p.ID),
		"{branch}", agent.ShellQuote(p.Branch), "{runner}", agent.ShellQuote(run.Name)).Replace(exec)}, nil
}

// Forward runs git flume with args for place id of another host (M3), made
// through one of this host's runners, on that runner: one ssh command in
// the runner's clone, or its exec line, whose output is the verb's own
// (issue 45). It reports false, running nothing, for a place of this
// host, one no runner made, or a runner this host does not declare: the
// verb then acts, or refuses, here. The remote verb's exit status comes
// back as a *proc.ExitError; an ssh runner ssh cannot reach, as an
// *UnreachableError.
func Forward(ctx context.Context, r *stage.Repository, id string, args []string, io Stdio) (_ bool, err error) {
	_, p, err := record.ReadPlace(ctx, r.Store, id)
	if err != nil || p.Host == r.Host || p.Runner == "" {
		return false, nil
	}
	cfg, err := runnerConfig(ctx, r, p.Target)
	if err != nil {
		return false, err
	}
	run, ok := cfg.Runners[p.Runner]
	if !ok || run.Check() != nil {
		return false, nil
	}
	var local map[int]int
	if run.Kind == "ssh" && (io.TTY || io.SayForwards) {
		local = localPorts(ctx, r, p)
	}
	argv, err := verbArgv(run, p, args, io, local)
	if err != nil {
		return true, err
	}
	defer func() {
		if err == nil && io.SayForwards && run.Kind == "ssh" && p.Run != nil && len(p.Run.Ports) > 0 {
			fwd, _ := sshArgv(run, "", false)
			// ssh's options, less "--", the host and the line: -N
			// runs nothing there and keeps the forwards open.
			fwd = withForwards(append(fwd[:len(fwd)-3:len(fwd)-3], "-N", "--", run.Host), p, local)
			fmt.Fprintf(io.Out, "# %s runs on %s: its ports are here while this runs: %s\n", id, p.Host, strings.Join(quoted(fwd), " "))
			for _, name := range slices.Sorted(maps.Keys(p.Run.Ports)) {
				if port := p.Run.Ports[name]; local[port] != 0 && local[port] != port {
					fmt.Fprintf(io.Out, "# %s=%d there is localhost:%d here (%d is taken here)\n", name, port, local[port], port)
				}
			}
		}
	}()
	err = proc.Run(ctx, proc.Cmd{Path: argv[0], Args: argv[1:], Dir: r.Dir, Env: run.Environ(r.CallerEnv), Stdin: io.In, Stdout: io.Out, Stderr: io.Err})
	if sshFailedOn(run, err) {
		return true, unreachable(ctx, r, id, run, p.Host)
	}
	return true, err
}

// sshFailed is ssh's own exit status when it could not run the command
// (the host unreachable, the key refused): the remote command's never is.
const sshFailed = 255

// sshFailedOn reports an ssh runner's command that ssh itself could not
// run.
func sshFailedOn(run stage.RunnerDecl, err error) bool {
	exit := (*proc.ExitError)(nil)
	return run.Kind == "ssh" && errors.As(err, &exit) && exit.Code == sshFailed
}

// UnreachableError is a verb on a place of another host that could not
// reach it through its runner: nothing was done there (M4).
type UnreachableError struct {
	Place, Runner, Host, SSHHost string
	// Heard is when Host was last heard, from its record; nil when it
	// never was.
	Heard *time.Time
}

func (e *UnreachableError) Error() string {
	heard := "never heard from in the records"
	if e.Heard != nil {
		heard = "last heard " + e.Heard.UTC().Format("2006-01-02 15:04:05 UTC") + ", from its records"
	}
	return fmt.Sprintf("%s: runner %s (ssh %s) is unreachable: nothing was done on host %s, %s; "+
		"git flume adopt %s --on ANOTHER starts it again elsewhere from its last shared work", e.Place, e.Runner, e.SSHHost, e.Host, heard, e.Place)
}

// unreachable is place id's UnreachableError, with when its host was last
// heard.
func unreachable(ctx context.Context, r *stage.Repository, id string, run stage.RunnerDecl, host string) error {
	e := &UnreachableError{Place: id, Runner: run.Name, Host: host, SSHHost: run.Host}
	if rec, err := r.Store.Read(ctx, record.HostRef(host)); err == nil {
		var h record.Host
		if rec.Decode(&h) == nil {
			e.Heard = &h.Heard
		}
	}
	return e
}

// quoted are words shell-quoted, one each.
func quoted(words []string) []string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = agent.ShellQuote(w)
	}
	return q
}

// withForwards puts, before argv's "--", one ssh -L per port leased to
// place p on its host, from the port here that local gives it.
func withForwards(argv []string, p *record.Place, local map[int]int) []string {
	if p.Run == nil || len(p.Run.Ports) == 0 {
		return argv
	}
	var fwd []string
	for _, name := range slices.Sorted(maps.Keys(p.Run.Ports)) {
		port := p.Run.Ports[name]
		fwd = append(fwd, "-L", fmt.Sprintf("%d:localhost:%d", cmp.Or(local[port], port), port))
	}
	at := slices.Index(argv, "--")
	if at < 0 {
		return append(argv, fwd...)
	}
	return slices.Concat(argv[:at], fwd, argv[at:])
}

// localPorts (M3) gives each port leased to place p on its host the port here
// that forwards to it: the same one where no lease of this host holds it
// and nothing listens on it, else one the system finds free and no lease
// holds. A place of this host's own could otherwise be reached by a
// forward meant for the runner's.
func localPorts(ctx context.Context, r *stage.Repository, p *record.Place) map[int]int {
	local := map[int]int{}
	if p.Run == nil || len(p.Run.Ports) == 0 {
		return local
	}
	leased, _ := runenv.PortsLeased(ctx, r.Env, r.Store)
	free := func(port int) bool {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			_ = l.Close()
		}
		return err == nil
	}
	for _, port := range p.Run.Ports {
		for here, tries := port, 0; tries < 20; tries++ {
			if !leased[here] && free(here) && !slices.Contains(slices.Collect(maps.Values(local)), here) {
				local[port] = here
				break
			}
			if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
				here = l.Addr().(*net.TCPAddr).Port
				_ = l.Close()
			}
		}
	}
	return local
}

// TidyThere runs git flume tidy with args where this host's runners keep
// places whose work, by the records, is over (dropped, or landed): once
// on each such ssh runner, once for each such place through a command
// runner's exec line; the output is the verb's (M3). It returns what it
// ran on, "runner" or "runner place"; one that fails is said and the
// others still run. A tidy there that kept a place (it says which, T2)
// comes back as its *proc.ExitError. First, the launch orders this clone
// wrote whose place came, or that are gone from their remote, are
// forgotten (M1).
func TidyThere(ctx context.Context, r *stage.Repository, args []string, io Stdio) ([]string, error) {
	recs, _, err := r.Store.List(ctx, record.PlacePrefix)
	if err != nil {
		return nil, err
	}
	cfg, err := runnerConfig(ctx, r, "")
	if err != nil {
		return nil, err
	}
	due := map[string]*record.Place{} // by "runner" or "runner place"
	for _, p := range record.DecodePlaces(recs) {
		run, ok := cfg.Runners[p.Runner]
		over := p.Dropped != nil || engine.LandedWork(p)
		if !ok || p.Host == r.Host || p.Phase != record.PhaseMade || !over || run.Kind == "command" && run.Exec == "" {
			continue
		}
		key := p.Runner
		if run.Kind == "command" {
			key += " " + p.ID
		}
		due[key] = p
	}
	var ran []string
	errs := []error{settleOrders(ctx, r, io.Out, slices.Contains(args, "--dry-run=true"))}
	var kept *proc.ExitError
	for _, key := range slices.Sorted(maps.Keys(due)) {
		p := due[key]
		run := cfg.Runners[p.Runner]
		argv, err := verbArgv(run, p, append([]string{"tidy"}, args...), Stdio{Shares: true}, nil)
		if err == nil {
			fmt.Fprintf(io.Out, "on runner %s:\n", key)
			err = proc.Run(ctx, proc.Cmd{Path: argv[0], Args: argv[1:], Dir: r.Dir, Env: run.Environ(r.CallerEnv), Stdout: io.Out, Stderr: io.Err})
		}
		exit := (*proc.ExitError)(nil)
		switch {
		case sshFailedOn(run, err):
			errs = append(errs, fmt.Errorf("tidy on runner %s: runner %s (ssh %s) is unreachable: nothing was tidied there", key, run.Name, run.Host))
		case errors.As(err, &exit):
			kept = exit // what it kept, it said (T2)
		case err != nil:
			errs = append(errs, fmt.Errorf("tidy on runner %s: %w", key, err))
		}
		ran = append(ran, key)
	}
	if errors.Join(errs...) == nil && kept != nil {
		return ran, kept
	}
	return ran, errors.Join(errs...)
}

// On runs git flume with args on runner name, declared here as ssh: one
// ssh command in its clone, its output and exit status the verb's (doctor
// --on, M3). A command runner's lines reach its places, not the runner
// itself, and it is refused.
func On(ctx context.Context, r *stage.Repository, name string, args []string, io Stdio) error {
	cfg, err := runnerConfig(ctx, r, "")
	if err != nil {
		return err
	}
	run, ok := cfg.Runners[name]
	switch {
	case !ok:
		return &stage.RefusedError{Place: name, Reason: fmt.Sprintf("no runner %q is declared ([runner %q] in .flume/config or your own config)", name, name)}
	case run.Kind != "ssh":
		return &stage.RefusedError{Place: name, Reason: "a command runner's lines reach its places, not the runner: run git flume " + args[0] + " where its start line runs (in its image or job)"}
	}
	if err := run.Check(); err != nil {
		return err
	}
	argv, err := sshArgv(run, remoteLine(args, io.Shares), io.TTY)
	if err != nil {
		return err
	}
	err = proc.Run(ctx, proc.Cmd{Path: argv[0], Args: argv[1:], Dir: r.Dir, Env: run.Environ(r.CallerEnv), Stdin: io.In, Stdout: io.Out, Stderr: io.Err})
	if sshFailedOn(run, err) {
		return fmt.Errorf("runner %s (ssh %s) is unreachable: ssh exited %d and ran nothing there", name, run.Host, sshFailed)
	}
	return err
}
