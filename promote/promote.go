// Package promote moves checked tips onto the main branches of several
// repositories, serially and never atomically (SPEC P6, P7): before a
// repository moves its intent is saved; its receipt is saved before the
// next one can move; every target is checked again between moves; an
// interrupted promotion is reconciled from evidence only, and no proven
// move is ever repeated.
//
// Each member repository keeps its own record at
// refs/flume/workspaces/<id>: its branch, base, tip, state and receipt. The
// chain of that record is the member's audit log.
package promote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
)

// States of a member's promotion.
const (
	Pending  = "pending"  // its branch is at its base
	Intent   = "intent"   // it is being moved, or was when a crash came
	Promoted = "promoted" // its branch is at its tip; the receipt says when
	Manual   = "manual"   // neither base nor tip: a person must look
)

// Target is one member's move: its branch from Base to the checked Tip.
type Target struct {
	Name   string
	Repo   string // the member repository
	Branch string // short name, such as "main"
	Base   string
	Tip    string
}

// Env is what workspace requests and promotion need from their caller.
// The command layer fills it; nothing here reads flags or the process
// environment.
type Env struct {
	Runner *git.Runner
	// Host names this host in records (R7).
	Host string
	Now  func() time.Time
	// Fault is a test seam: crash tests stop a verb at a named point. nil
	// in git-flume itself.
	Fault func(point string)
	// CallerEnv is the caller's environment. Checks and the worker get it
	// without the GIT_DIR family (R9).
	CallerEnv []string
	// Pane is "tmux" (default) or "print" (flume prints the worker's
	// command for a person to run and watches its transcript); Panes
	// hosts the worker.
	Pane  string
	Panes agents.PaneHost
	Print io.Writer
	// Out receives progress for people, one line per repository moved.
	Out io.Writer
	// ConfirmWindow is how long the worker's prompt may take to show in
	// its transcript before it is checked and sent once more (A3).
	ConfirmWindow time.Duration
	// Interval is how often the worker's transcript is read.
	Interval time.Duration
}

func (e *Env) progress(format string, args ...any) {
	if e.Out != nil {
		fmt.Fprintf(e.Out, format+"\n", args...)
	}
}

func (e *Env) fault(point string) {
	if e.Fault != nil {
		e.Fault(point)
	}
}

// RecordRef is the ref of a workspace request's record in each member.
func RecordRef(id string) string { return refs.Prefix + "workspaces/" + id }

// RefusedError is a promotion refused before anything moved, or stopped
// before the next member moved, with the member and the reason.
type RefusedError struct {
	Member string
	Reason string
}

func (e *RefusedError) Error() string { return fmt.Sprintf("%s: %s", e.Member, e.Reason) }

// member is one target with its repository and record.
type member struct {
	t     Target
	repo  *git.Repo
	store *refs.Store
	rec   *refs.Record
	r     Record
	// wt is the worktree with the member's branch checked out, as the
	// preflight found it.
	wt *git.Worktree
}

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
		store := refs.New(repo)
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
		r := Record{Schema: 1, Kind: "workspace", ID: id, Member: m.t.Name, Branch: m.t.Branch, Base: m.t.Base, Tip: m.t.Tip, State: Pending}
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

func (m *member) save(ctx context.Context, msg string) error {
	w, err := m.store.Write(ctx, []refs.Change{{Ref: m.rec.Ref, Old: m.rec, State: m.r, Message: fmt.Sprintf("promote %s: %s %s", m.r.ID, m.t.Name, msg)}})
	if err != nil {
		return fmt.Errorf("%s: %w", m.t.Name, err)
	}
	m.rec = w[0]
	return nil
}

func (m *member) branchRef() string { return "refs/heads/" + m.t.Branch }

// at reads where the member's branch is.
func (m *member) at(ctx context.Context) (string, error) {
	return m.repo.RefValue(ctx, m.branchRef())
}

// checkout finds the worktree that has the member's branch checked out.
func (m *member) checkout(ctx context.Context) (*git.Worktree, error) {
	// Most often it is the main checkout; git checks a branch out in one
	// worktree only, so no other needs looking at then.
	if !m.repo.Bare {
		if b, err := m.repo.WorktreeBranch(m.repo.Dir); err == nil && b == m.branchRef() {
			return &git.Worktree{Path: m.repo.Dir, Branch: b, Main: true}, nil
		}
	}
	wts, err := m.repo.Worktrees(ctx)
	if err != nil {
		return nil, err
	}
	for i := range wts {
		if wts[i].Branch == m.branchRef() {
			return &wts[i], nil
		}
	}
	return nil, nil
}

// check verifies a member is where its state says (P6): a pending one at
// its base, fast-forwardable to its tip, its checkout clean; a promoted one
// at its tip. full adds what cannot change between two moves of one
// promotion (the tip's ancestry, where the branch is checked out). clean
// reads the checkout's cleanliness (one git status); the position is read
// every time, in process.
func (m *member) check(ctx context.Context, full, clean bool) error {
	at, err := m.at(ctx)
	if err != nil {
		return err
	}
	switch m.r.State {
	case Promoted:
		if at != m.r.Tip {
			return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("promoted to %.12s but %s is at %.12s now", m.r.Tip, m.t.Branch, at)}
		}
		return nil
	case Intent:
		return &RefusedError{Member: m.t.Name, Reason: "a promotion was interrupted here; run reconcile first"}
	case Manual:
		return &RefusedError{Member: m.t.Name, Reason: "needs manual reconciliation: " + m.r.Manual}
	}
	if at != m.r.Base {
		return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("%s is at %.12s, expected its base %.12s", m.t.Branch, at, m.r.Base)}
	}
	// A staged tip's ancestry was proved when it was staged, and two
	// commits' ancestry never changes.
	provedAtStage := m.r.Staged != nil && m.r.Staged.Commit == m.r.Tip
	if full && !provedAtStage {
		if ok, err := m.repo.IsAncestor(ctx, m.r.Base, m.r.Tip); err != nil {
			return err
		} else if !ok {
			return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("tip %.12s does not descend from %s's base: never a re-merge, never a force", m.r.Tip, m.t.Branch)}
		}
	}
	if full {
		if m.wt, err = m.checkout(ctx); err != nil {
			return err
		}
	}
	wt := m.wt
	if wt == nil || !clean {
		return nil
	}
	dirty, err := m.repo.Dirty(ctx, wt.Path)
	if err != nil {
		return err
	}
	if len(dirty) > 0 {
		// P6: a dirty main checkout is preserved and blocks promotion.
		return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("%s is checked out at %s with changes (%s); they are kept and block promotion", m.t.Branch, wt.Path, dirty[0])}
	}
	return nil
}

// Promote moves every member's branch to its tip, serially. It refuses to
// start unless every target passes its preflight, checks every target
// again before each move, and never repeats a proven move: a member with a
// receipt is skipped. It stops at the first member that cannot move,
// leaving the earlier ones promoted (promotion is not atomic, P6).
func Promote(ctx context.Context, env *Env, id string, targets []Target) error {
	ms, err := open(ctx, env, id, targets)
	if err != nil {
		return err
	}
	return promoteMembers(ctx, env, id, ms)
}

func promoteMembers(ctx context.Context, env *Env, id string, ms []*member) error {
	for _, m := range ms {
		if err := m.check(ctx, true, true); err != nil {
			return err
		}
	}
	for i, m := range ms {
		if m.r.State == Promoted {
			env.progress("%s: %s already at %.12s (receipt kept)", m.t.Name, m.t.Branch, m.r.Tip)
			continue // P7: no proven promotion is repeated
		}
		// P6: every target again, between moves: each one's position,
		// and the mover's checkout, which must be clean to come along.
		// Another member's checkout is read when its own turn comes.
		for _, o := range ms {
			if err := o.check(ctx, false, o == m && i > 0); err != nil {
				return err
			}
		}
		env.fault(fmt.Sprintf("before-intent:%d", i))
		m.r.State = Intent
		if err := m.save(ctx, "intent"); err != nil {
			return err
		}
		env.fault(fmt.Sprintf("after-intent:%d", i))
		wt := m.wt
		// The move: a compare-and-swap from the base to the exact tip.
		err := m.repo.UpdateRefsLogged(ctx, "flume promote "+id, []git.RefUpdate{{Op: git.Update, Name: m.branchRef(), New: m.r.Tip, Old: m.r.Base}})
		if err != nil {
			return fmt.Errorf("%s: move %s: %w (run reconcile)", m.t.Name, m.t.Branch, err)
		}
		env.fault(fmt.Sprintf("after-move:%d", i))
		if wt != nil {
			// A checked-out branch brings its clean work tree along.
			if err := m.repo.SwitchTree(ctx, wt.Path, m.r.Base, m.r.Tip); err != nil {
				return fmt.Errorf("%s: %w (run reconcile)", m.t.Name, err)
			}
		}
		env.fault(fmt.Sprintf("after-switch:%d", i))
		if err := m.receipt(ctx, env); err != nil {
			return err
		}
		env.progress("%s: %s %.12s -> %.12s, receipt saved", m.t.Name, m.t.Branch, m.r.Base, m.r.Tip)
		env.fault(fmt.Sprintf("after-receipt:%d", i))
	}
	return nil
}

// receipt verifies the live branch is at the tip and saves the receipt.
func (m *member) receipt(ctx context.Context, env *Env) error {
	at, err := m.at(ctx)
	if err != nil {
		return err
	}
	if at != m.r.Tip {
		return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("after the move %s is at %.12s, not the tip %.12s", m.t.Branch, at, m.r.Tip)}
	}
	m.r.State, m.r.Manual = Promoted, ""
	m.r.Receipt = &Receipt{From: m.r.Base, To: m.r.Tip, At: env.Now().UTC()}
	return m.save(ctx, fmt.Sprintf("receipt %.12s -> %.12s", m.r.Base, m.r.Tip))
}

// Outcome is what reconcile found for one member.
type Outcome struct {
	Member string `json:"member"`
	// Step is what was settled: allocation, stage or promote.
	Step   string `json:"step,omitempty"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// Reconcile settles interrupted moves from evidence only (P7): a member
// whose intent was saved is compared with its endpoints: at its tip it
// gets its receipt (its work tree brought along if the crash came first),
// at its base it is pending again, anywhere else it needs a person.
// Nothing is moved, adopted or replayed.
func Reconcile(ctx context.Context, env *Env, id string, targets []Target) ([]Outcome, error) {
	ms, err := open(ctx, env, id, targets)
	if err != nil {
		return nil, err
	}
	return reconcileMembers(ctx, env, ms)
}

func reconcileMembers(ctx context.Context, env *Env, ms []*member) ([]Outcome, error) {
	var out []Outcome
	for i, m := range ms {
		if m.r.State != Intent {
			state := m.r.State
			if state == "" {
				state = Pending
			}
			out = append(out, Outcome{Member: m.t.Name, State: state, Reason: m.r.Manual})
			continue
		}
		env.fault(fmt.Sprintf("reconcile:%d", i))
		at, err := m.at(ctx)
		if err != nil {
			return out, err
		}
		switch at {
		case m.r.Tip:
			if wt, err := m.checkout(ctx); err != nil {
				return out, err
			} else if wt != nil {
				// The crash came between the move and the work tree:
				// finish the checkout only if the index is still the
				// base's, untouched.
				idx, err := m.repo.IndexTree(ctx, wt.Path)
				if err != nil {
					return out, err
				}
				baseTree, err := m.repo.ResolveRef(ctx, m.r.Base+"^{tree}")
				if err != nil {
					return out, err
				}
				if idx == baseTree {
					if err := m.repo.SwitchTree(ctx, wt.Path, m.r.Base, m.r.Tip); err != nil {
						return out, err
					}
				}
			}
			if err := m.receipt(ctx, env); err != nil {
				return out, err
			}
		case m.r.Base:
			m.r.State = Pending
			if err := m.save(ctx, "reconciled: still at its base, pending"); err != nil {
				return out, err
			}
		default:
			m.r.State = Manual
			m.r.Manual = fmt.Sprintf("%s is at %.12s, neither its base %.12s nor its tip %.12s", m.t.Branch, at, m.r.Base, m.r.Tip)
			if err := m.save(ctx, "reconciled: manual"); err != nil {
				return out, err
			}
		}
		out = append(out, Outcome{Member: m.t.Name, State: m.r.State, Reason: m.r.Manual})
	}
	return out, nil
}
