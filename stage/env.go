package stage

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/broker"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage/record"
)

// Env is what stage operations need from their caller. The command layer
// fills it; nothing below reads flags or the process environment.
type Env struct {
	Runner *git.Runner
	// Kinds are the record kinds its stores know (refs.Kinds), wired
	// by the program.
	Kinds refs.Kinds
	// Host names this host in records (flume.host, else the hostname).
	Host string
	// PID is the calling process, recorded while it makes a place.
	PID int
	// Now dates records (FLUME_NOW fixes it in tests).
	Now func() time.Time
	// Clock is what the engine's timers read (confirm window, report
	// grace, reminder, stuck, budget), and what dates the moments they
	// measure from; nil is the real clock. A test build moves it forward
	// so scripts never sleep past a window.
	Clock func() time.Time
	// CallerEnv is the caller's environment; repository steps get only
	// PATH, HOME, LANG and TERM from it (X4).
	CallerEnv []string
	// UserConfig is the user-level flume config file.
	UserConfig string
	// Out receives progress for people (step output, what tidy did).
	Out io.Writer
	// Engine tunes the stage engine.
	Engine EngineOptions
	// StartWatcher starts a detached watcher for a place (A7); nil starts
	// none.
	StartWatcher func(repoDir, id string)
	// Fault is the crash tests' seam: called at named points of an engine
	// step (a test kills the process there). nil in git-flume itself.
	Fault func(point string)
}

// NotARepoError is a --repo that cannot hold places (a bare repository).
type NotARepoError struct {
	Dir    string
	Reason string
}

func (e *Env) FaultAt(point string) {
	if e.Fault != nil {
		e.Fault(point)
	}
}

func (e *NotARepoError) Error() string { return fmt.Sprintf("%s: %s", e.Dir, e.Reason) }

// Open finds the repository containing dir and its state store. The
// runner answers each directory once when it is made to (git.Runner's
// OpenOnce): a command's steps, or a watcher's loops, share one Repo.
func (e *Env) Open(ctx context.Context, dir string) (*git.Repo, *refs.Store, error) {
	repo, err := e.Runner.Open(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	s := refs.New(repo, e.Kinds)
	s.Now = e.Now
	return repo, s, nil
}

func (e *Env) NowUTC() time.Time { return e.Now().UTC() }

// AgentName is the agent program a place uses: the one it names, else the
// engine's default (FLUME_AGENT), else claude.
func (e *Env) AgentName(named string) string { return agent.ProgramName(named, e.Engine.Agent) }

// Self is this process as records name it (a lease, a launcher, a
// starter): its pid, host and start time.
func (e *Env) Self() *record.Proc {
	start, _ := proc.Started(e.PID)
	return &record.Proc{PID: e.PID, Host: e.Host, Start: start}
}

// ClockNow is the timers' time, in UTC.
func (e *Env) ClockNow() time.Time {
	if e.Clock != nil {
		return e.Clock().UTC()
	}
	return time.Now().UTC()
}

// BackgroundEnv is the environment of git-flume's own background work (the
// hook's advance, watchers, a workspace's observer, the verbs a watcher
// runs for its agent): environ without an agent session's variables. A
// hook runs inside an agent's session, and ending that agent ends every
// process carrying its session; flume's own work must not be among them,
// nor run as that agent by accident, nor think itself sandboxed.
func BackgroundEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		switch name, v, _ := strings.Cut(kv, "="); name {
		case "FLUME_SESSION", "FLUME_SESSION_PID", "FLUME_PLACE", "FLUME_STAGE", broker.InboxVar, refs.BrokerVar:
		default:
			if name != "FLUME_SANDBOX" || v != "landlock" {
				env = append(env, kv)
			}
		}
	}
	return env
}
