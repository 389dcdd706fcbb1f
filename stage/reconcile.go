package stage

import (
	"context"

	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage/record"
)

// InterruptedReady is place p's readying as it stands when the process
// running it died: interrupted. ok is false while it runs, or when it is
// not this host's to tell.
func InterruptedReady(env *Env, p *record.Place) (r *record.ReadyResult, ok bool) {
	cur := p.Ready
	if p.Host != env.Host || cur == nil || cur.Running == nil || cur.Running.Alive(env.Host) {
		return nil, false
	}
	return &record.ReadyResult{Steps: cur.Steps, Exit: -1, Step: "(interrupted)", Tail: "readying was interrupted before it finished"}, true
}

// ReconcileReady records a readying whose process died as interrupted: the
// engine's first move on a place (status only shows it).
func ReconcileReady(ctx context.Context, env *Env, store *refs.Store, rec *refs.Record, p *record.Place) (moved bool, err error) {
	r, ok := InterruptedReady(env, p)
	if !ok {
		return false, nil
	}
	p.Ready = r
	_, err = record.SavePlace(ctx, store, rec, p, "ready "+p.ID+": interrupted")
	return err == nil, err
}
