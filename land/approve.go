package land

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
)

// Approve records a person's approval of place id's entry, proven green
// on its target's tip as that tip now stands (Q7): a reviewer approves
// only what the lander would land. An agent does not approve, neither
// from a place's folder nor with a place in its environment; only the
// entry's host approves it (R7). Approving again changes nothing.
func (l *Lander) Approve(ctx context.Context, id string) (*Entry, error) {
	env := l.r.Env
	if from := cmp.Or(stage.CallerPlace(env), stage.PlaceAt(ctx, l.r.Store, l.r.Git)); from != "" {
		return nil, &stage.RefusedError{Place: id, Reason: "a person approves, not the agent of " + from}
	}
	rec, e, err := read(ctx, l.r.Store, id)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, &stage.RefusedError{Place: id, Reason: "not submitted: git flume submit " + id + " first"}
	}
	if e.Host != env.Host {
		return nil, &stage.RefusedError{Place: id, Reason: "submitted by host " + e.Host + ", and only its owner approves it: act on " + e.Host}
	}
	if e.Approved() {
		return e, nil
	}
	if e.State != Proven {
		return nil, &stage.RefusedError{Place: id, Reason: "it is " + e.State + ", not proven green on " + e.Target + "'s tip: a reviewer approves only what git flume land proved"}
	}
	l.tips = map[string]targetTip{}
	t, err := l.targetTip(ctx, e.Target)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	if e.Proof.Base != t.tip {
		return nil, &stage.RefusedError{Place: id, Reason: fmt.Sprintf("its proof is on %.12s and %s is at %.12s now: git flume land proves it again before it is approved", e.Proof.Base, e.Target, t.tip)}
	}
	e.Approval = &Approval{Tip: e.Tip, By: approver(env), At: env.NowUTC()}
	_, err = l.r.Store.Write(ctx, []refs.Change{{Ref: Ref(id), Old: rec, State: e, Message: fmt.Sprintf("approve %s at %.12s", id, e.Tip)}})
	return e, err
}

// Waiting are this host's entries waiting for approval: proven green on
// their target's tip as it now stands, in the order the lander takes them.
func (l *Lander) Waiting(ctx context.Context) ([]*Entry, error) {
	queued, err := l.queued(ctx, nil, new(map[string]int), true)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(queued, func(e *Entry) bool { return e.State != Proven || e.Approved() || e.Proof.Base != l.tips[e.Target].tip }), nil
}

// approver names the person approving: their login on this host.
func approver(env *stage.Env) string {
	user := "someone"
	for _, kv := range env.CallerEnv {
		if v, ok := strings.CutPrefix(kv, "USER="); ok && v != "" {
			user = v
		}
	}
	return user + "@" + env.Host
}
