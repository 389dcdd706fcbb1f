package run

import (
	"context"

	"github.com/git-flume/git-flume/agents"
)

// Effects are how a move reaches the world: the pane host its agent runs
// in and how the caller records a run and keeps a work tree.
type Effects struct {
	// Panes is the agent's pane host; nil for an operator's (print) agent.
	Panes agent.PaneHost
	// Save records run r with message msg, as one compare-and-swap of the
	// caller's record (R2); false when nothing was written.
	Save func(ctx context.Context, r Run, msg string) (bool, error)
	// Keep keeps what the agent left in the work tree before its end is
	// recorded (W3), in a snapshot named by the move; nil keeps nothing.
	Keep func(ctx context.Context, snapshot string) error
	// Fault marks a point of a step where a crash test may stop the
	// process; nil marks nothing.
	Fault func(point string)
	// Fresh fails (with the caller's conflict error) when the record the
	// decision was made from has moved meanwhile: an agent is never ended
	// on a decision another process has already overtaken (an accept
	// recording what it merges, a stop). nil checks nothing.
	Fresh func(ctx context.Context) error
}

func (e Effects) fault(point string) {
	if e.Fault != nil {
		e.Fault(point)
	}
}

// Apply makes move mv, which Decide chose for run before and which leads to
// run after: a follow-up typed only into a ready composer (X3) and recorded
// only once typed (a dialog blocks the run with its words, nothing typed);
// an agent ended and verified gone (K1, X5), its work tree kept, before its
// end is recorded; a prompt resent (A3, Resent); or a plain record write.
// untyped reports a follow-up that could not be typed now: the caller
// decides once more with Observation.Busy.
func Apply(ctx context.Context, before, after Run, mv Move, prompt string, o Observation, p Policy, e Effects) (moved, untyped bool, err error) {
	switch {
	case mv.Resend:
		return applyResend(ctx, before, prompt, o, p, e)
	case mv.Tell != "":
		return applyTell(ctx, before, after, mv, e)
	case mv.End != "":
		// A run ends only with its agent gone, and nothing starts over it
		// (K1).
		if e.Fresh != nil {
			if err := e.Fresh(ctx); err != nil {
				return false, false, err
			}
		}
		r := after.clone()
		if err := End(ctx, e.Panes, r.Agent); err != nil {
			return false, false, err
		}
		if mv.End == SnapshotEnd {
			e.fault("deliver:agent-ended")
		}
		if e.Keep != nil {
			if err := e.Keep(ctx, mv.End); err != nil {
				return false, false, err
			}
		}
		moved, err = e.Save(ctx, r, mv.Write)
		if moved && mv.End == SnapshotEnd {
			e.fault("deliver:recorded")
		}
		return moved, false, err
	case mv.Write != "":
		moved, err = e.Save(ctx, after, mv.Write)
		return moved, false, err
	}
	return false, false, nil
}

// applyResend checks the prompt on screen and sends it once more, or not,
// and records what Resent decides of that (A3).
func applyResend(ctx context.Context, before Run, prompt string, o Observation, p Policy, e Effects) (moved, untyped bool, err error) {
	res, err := agent.ResendPrompt(ctx, e.Panes, before.Agent.Pane, before.Agent.Format, prompt, before.Agent.Sends)
	if err != nil {
		return false, false, err
	}
	r, mv := Resent(before, res, o, p)
	if mv.Write == "" {
		return false, false, nil
	}
	if res.Sent {
		e.fault("resend:sent")
	}
	moved, err = e.Save(ctx, r, mv.Write)
	return moved, false, err
}

// applyTell types a follow-up only into the agent's ready composer (X3)
// and records the run as decided once it is typed; a screen that is a
// dialog blocks the run with its words, nothing typed; a busy or gone
// agent is untyped, for the caller to decide again.
func applyTell(ctx context.Context, before, after Run, mv Move, e Effects) (moved, untyped bool, err error) {
	a := before.Agent
	if a == nil || a.Ended || a.Printed() || e.Panes == nil || !e.Panes.Alive(ctx, a.Pane) {
		return false, true, nil
	}
	sent, blocked, err := agent.Tell(ctx, e.Panes, a.Pane, a.Format, mv.Tell)
	switch {
	case err != nil:
		return false, false, err
	case blocked != "":
		r := before.clone()
		r.Blocked(BlockDialog, DialogReason(blocked))
		moved, err = e.Save(ctx, r, "blocked: "+blocked)
		return moved, false, err
	case !sent:
		return false, true, nil
	}
	moved, err = e.Save(ctx, after, mv.Write)
	return moved, false, err
}

// End ends a run's agent and verifies it gone (X5), marking a its record
// ended; an agent already ended is left as it is. An operator's agent
// (print) has no pane: the processes of its session are ended.
func End(ctx context.Context, panes agent.PaneHost, a *Agent) error {
	if a == nil || a.Ended {
		return nil
	}
	if a.Printed() {
		panes = nil
	}
	if err := agent.End(ctx, panes, a.Pane, a.Session); err != nil {
		return err
	}
	a.Ended = true
	return nil
}
