// What a stage is in, what blocks it, and how the engine that moves it is
// tuned: the words every workflow reads in a place's record.

package stage

import (
	"context"
	"io"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/agents/sandbox"
)

// EngineOptions tune how stages start and are watched.
type EngineOptions struct {
	// Export writes place id's export page to w ([notify] export): the
	// export command's writer, given by the command layer, which owns
	// the views.
	Export func(ctx context.Context, env *Env, repoDir, id string, w io.Writer) error
	// Pane is "tmux" (default), "print" (flume prints the command and
	// watches the transcript) or "none" (flume starts no agent).
	Pane string
	// Panes is the pane host of Pane, for agents that record none.
	Panes agent.PaneHost
	// Hosts makes the pane host an agent recorded ("tmux", "herdr"), so a
	// command run with another default still reaches it; nil uses Panes.
	Hosts func(name string) agent.PaneHost
	// Agent is the program used when a place names none.
	Agent string
	// ConfirmWindow is how long a sent prompt may take to show in the
	// transcript before it is checked and sent once more (A3).
	ConfirmWindow time.Duration
	// StuckAfter is how long a stage may be quiet before it is reported
	// stuck (A7).
	StuckAfter time.Duration
	// Print receives the command an operator runs with the print pane.
	Print io.Writer
	// NoStart records what happened but starts no agent: for a run from a
	// hook, which runs inside an agent's environment, not the launching
	// caller's (A1). A watcher or the next command starts the stage.
	NoStart bool
	// Budget, when set, is every stage's budget, unclamped: a test and
	// experiment knob ($FLUME_BUDGET). Configuration sets it otherwise (W1).
	Budget time.Duration
	// Guard is the command an agent's PreToolUse hook runs to ask flume
	// (A9), such as "/usr/local/bin/git-flume guard"; "" installs none.
	Guard string
	// Sandbox is the program that enters an agent's sandbox before the
	// agent starts (agent.SandboxCommand), such as "git-flume"; "" runs
	// agents without one (A12).
	Sandbox string
	// ReportGrace is how long an agent whose deliverable is in git may
	// still take to close its turn with its STAGE REPORT (W2).
	ReportGrace time.Duration
	// RemindAfter is how long a turn that ended with neither deliverable
	// nor need stays quiet before the one reminder (A8).
	RemindAfter time.Duration
	// NoGrace ends a stage whose deliverable is in git at once, with no
	// report grace: for tidy, which ends the agent anyway.
	NoGrace bool
	// RadarEvery is how often at most a place's watcher takes its
	// fingerprint again while its agent works.
	RadarEvery time.Duration
	// HostRead bounds the read of one repository of the host's index
	// (status --host, board): one that does not answer is named and the
	// others print.
	HostRead time.Duration
}

// NoLandlock says why this machine cannot hold an agent's sandbox, ""
// when it can.
func (o EngineOptions) NoLandlock() string { return sandbox.Unavailable() }

// RadarInterval is RadarEvery, or 30 seconds when unset.
func (o EngineOptions) RadarInterval() time.Duration { return setOr(o.RadarEvery, 30*time.Second) }

// HostReadTimeout is HostRead, or 10 seconds when unset.
func (o EngineOptions) HostReadTimeout() time.Duration { return setOr(o.HostRead, 10*time.Second) }

// Grace is ReportGrace, or 60 seconds when unset.
func (o EngineOptions) Grace() time.Duration { return setOr(o.ReportGrace, 60*time.Second) }

// Remind is RemindAfter, or 2 minutes when unset.
func (o EngineOptions) Remind() time.Duration { return setOr(o.RemindAfter, 2*time.Minute) }

// Window is ConfirmWindow, or 60 seconds when unset.
func (o EngineOptions) Window() time.Duration { return setOr(o.ConfirmWindow, 60*time.Second) }

// Stuck is StuckAfter, or 30 minutes when unset.
func (o EngineOptions) Stuck() time.Duration { return setOr(o.StuckAfter, 30*time.Minute) }

// setOr is d when it is set (positive), else def.
func setOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// RunPanes is the pane host a's lifecycle runs against: nil for an agent
// the operator started (print), which flume neither reads nor types into.
func (o EngineOptions) RunPanes(a *run.Agent) agent.PaneHost {
	if a == nil || a.Printed() {
		return nil
	}
	return o.HostOf(a)
}

// HostOf is the pane host agent a runs in: the one it recorded, or the
// default one.
func (o EngineOptions) HostOf(a *run.Agent) agent.PaneHost {
	if a != nil && a.PaneHost != "" && o.Hosts != nil {
		return o.Hosts(a.PaneHost)
	}
	return o.Panes
}

// Up reports whether agent a runs in its pane now; an agent the operator
// started (print) is never "up" for flume to type into.
func (o EngineOptions) Up(ctx context.Context, a *run.Agent) bool {
	if a.Pane == "print" {
		return false
	}
	h := o.HostOf(a)
	return h != nil && h.Alive(ctx, a.Pane)
}

// EngineOptionsFrom are the engine's options as environment variables
// vars set them: FLUME_AGENT, FLUME_SANDBOX, and durations in Go's
// syntax: FLUME_CONFIRM_WINDOW, FLUME_REPORT_GRACE, FLUME_REMIND_AFTER,
// FLUME_BUDGET, FLUME_STUCK_AFTER, FLUME_RADAR_INTERVAL, FLUME_HOST_READ.
// The pane (FLUME_PANE, FLUME_TMUX_SOCKET) and its hosts are the
// caller's to set.
func EngineOptionsFrom(vars map[string]string) EngineOptions {
	o := EngineOptions{Agent: vars["FLUME_AGENT"]}
	for name, d := range map[string]*time.Duration{"FLUME_CONFIRM_WINDOW": &o.ConfirmWindow, "FLUME_REPORT_GRACE": &o.ReportGrace,
		"FLUME_REMIND_AFTER": &o.RemindAfter, "FLUME_BUDGET": &o.Budget, "FLUME_STUCK_AFTER": &o.StuckAfter, "FLUME_RADAR_INTERVAL": &o.RadarEvery, "FLUME_HOST_READ": &o.HostRead} {
		if v, err := time.ParseDuration(vars[name]); err == nil {
			*d = v
		}
	}
	// The agent's hook and sandbox find git-flume on its PATH, as `git
	// flume` does (os.Executable would name a test binary under
	// testscript). A12: agents write only their place, unless
	// FLUME_SANDBOX=off.
	o.Guard = "git-flume guard"
	if vars["FLUME_SANDBOX"] != "off" {
		o.Sandbox = "git-flume"
	}
	return o
}
