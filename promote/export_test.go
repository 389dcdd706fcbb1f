package promote

import (
	"context"
	"errors"
	"fmt"

	"github.com/git-flume/git-flume/promote/request"
	"github.com/git-flume/git-flume/refs"
)

// Promote and Reconcile run the serial promotion's engine over plain
// targets, without a workspace request around them: the tests' way in to
// promoteMembers and reconcileMembers, which the workspace verbs run.

func Promote(ctx context.Context, env *Env, id string, targets []Target) error {
	ms, err := open(ctx, env, id, targets)
	if err != nil {
		return err
	}
	return promoteMembers(ctx, env, id, ms)
}

func Reconcile(ctx context.Context, env *Env, id string, targets []Target) ([]Outcome, error) {
	ms, err := open(ctx, env, id, targets)
	if err != nil {
		return nil, err
	}
	return reconcileMembers(ctx, env, ms)
}

// open makes the members of a promotion over plain targets, each with its
// record (created pending the first time).
func open(ctx context.Context, env *Env, id string, targets []Target) ([]*member, error) {
	if len(targets) == 0 || len(targets) > 8 {
		return nil, fmt.Errorf("a promotion takes 1 to 8 repositories, got %d", len(targets))
	}
	ms := make([]*member, len(targets))
	for i, t := range targets {
		repo, err := env.Runner.OpenTop(ctx, t.Repo)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
		store := refs.New(repo, refs.Kinds{refs.ClaimKind, request.WorkspaceKind, request.ReservationKind})
		store.Now = env.Now
		m := &member{t: t, repo: repo, store: store}
		if err := m.read(ctx, id); err != nil {
			return nil, err
		}
		ms[i] = m
	}
	return ms, nil
}

// read loads the member's record, creating it (pending) the first time.
func (m *member) read(ctx context.Context, id string) error {
	rec, err := m.store.Read(ctx, RecordRef(id))
	if errors.Is(err, refs.ErrNotFound) {
		r := request.Record{Schema: 1, Kind: "workspace", ID: id, Member: m.t.Name, Branch: m.t.Branch, Base: m.t.Base, Tip: m.t.Tip, State: Pending}
		w, err := m.store.Write(ctx, []refs.Change{{Ref: RecordRef(id), State: r, Message: fmt.Sprintf("promote %s: %s %s %.12s..%.12s", id, m.t.Name, m.t.Branch, m.t.Base, m.t.Tip)}})
		if err != nil {
			return fmt.Errorf("%s: %w", m.t.Name, err)
		}
		m.rec, m.r = w[0], r
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", m.t.Name, err)
	}
	m.rec = rec
	if err := rec.Decode(&m.r); err != nil {
		return err
	}
	if m.r.Branch != m.t.Branch || m.r.Base != m.t.Base || m.r.Tip != m.t.Tip {
		return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("request %s recorded %s %.12s..%.12s, not %s %.12s..%.12s",
			m.r.ID, m.r.Branch, m.r.Base, m.r.Tip, m.t.Branch, m.t.Base, m.t.Tip)}
	}
	return nil
}
