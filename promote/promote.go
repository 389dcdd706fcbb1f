package promote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/promote/request"
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
	// Kinds are the record kinds its stores know (refs.Kinds), wired
	// by the program.
	Kinds refs.Kinds
	// Host names this host in records (R7).
	Host string
	// Now dates records (FLUME_NOW fixes it in tests).
	Now func() time.Time
	// Clock is what the worker's timers read (confirm window, --max,
	// --idle); nil is the real clock. A test build moves it forward.
	Clock func() time.Time
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
	Panes agent.PaneHost
	Print io.Writer
	// Out receives progress for people, one line per repository moved.
	Out io.Writer
	// ConfirmWindow is how long the worker's prompt may take to show in
	// its transcript before it is checked and sent once more (A3).
	ConfirmWindow time.Duration
	// Interval is how often the worker's transcript is read.
	Interval time.Duration
	// StartObserver starts a detached observer of a request's worker;
	// nil starts none.
	StartObserver func(root, id string)
	// Sandbox is the program that enters a worker's sandbox (A12), as
	// the stage engine's; "" runs workers without one.
	Sandbox string
	// Program resolves an agent program by name for a request under root:
	// direct work starts each later task's worker with the program its
	// first one ran. nil knows the built-in programs only.
	Program func(root, name string) (agent.Program, error)
}

// clock is the timers' time, in UTC.
func (e *Env) clock() time.Time {
	if e.Clock != nil {
		return e.Clock().UTC()
	}
	return time.Now().UTC()
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
	r     request.Record
	// wt is the worktree with the member's branch checked out, as the
	// preflight found it.
	wt *git.Worktree
	// intent is the member's intent record, prepared for its move.
	intent *refs.Prepared
	// steps carries its move and its receipt through one update-ref
	// while it is promoted (see promoteOne); nil otherwise.
	steps *refs.Store
}

// writer is the store a member's move and receipt are saved through.
func (m *member) writer() *refs.Store {
	if m.steps != nil {
		return m.steps
	}
	return m.store
}

func (m *member) save(ctx context.Context, msg string) error {
	w, err := m.store.Write(ctx, []refs.Change{m.change(m.r, msg)})
	if err != nil {
		return fmt.Errorf("%s: %w", m.t.Name, err)
	}
	m.rec = w[0]
	return nil
}

func (m *member) change(r request.Record, msg string) refs.Change {
	return recordChange(m.rec, r, fmt.Sprintf("promote %s: %s %s", r.ID, m.t.Name, msg))
}

// recordChange is the write of a member's record r over old (nil for one
// not recorded yet), said by msg: the one shape every record write takes.
func recordChange(old *refs.Record, r request.Record, msg string) refs.Change {
	return refs.Change{Ref: RecordRef(r.ID), Old: old, State: r, Message: msg}
}

// prepareIntent writes the objects of the member's intent record ahead of
// its move, so that the move's transaction only moves refs.
func (m *member) prepareIntent(ctx context.Context) error {
	r := m.r
	r.State = Intent
	p, err := m.store.Prepare(ctx, m.change(r, fmt.Sprintf("intent, and %s %.12s -> %.12s", m.t.Branch, m.r.Base, m.r.Tip)))
	if err != nil {
		return fmt.Errorf("%s: %w", m.t.Name, err)
	}
	m.intent = p
	return nil
}

// move saves the member's intent and moves its branch from its base to its
// exact tip, one transaction, the intent first (P6): git commits a
// transaction's refs in the order given, so a crash inside it leaves the
// intent saved with the branch at its base (reconcile: pending), never the
// branch moved without it. The branch moves by compare-and-swap.
func (m *member) move(ctx context.Context, id string) error {
	if m.intent == nil {
		if err := m.prepareIntent(ctx); err != nil {
			return err
		}
	}
	move := git.RefUpdate{Op: git.Update, Name: m.branchRef(), New: m.r.Tip, Old: m.r.Base}
	w, err := m.writer().Commit(ctx, "flume promote "+id, []*refs.Prepared{m.intent}, move)
	m.intent = nil
	if err != nil {
		return err
	}
	m.rec, m.r.State = w[0], Intent
	return nil
}

func (m *member) branchRef() string { return "refs/heads/" + m.t.Branch }

// at reads where the member's branch is.
func (m *member) at(ctx context.Context) (string, error) {
	return m.repo.RefValue(ctx, m.branchRef())
}

// checkout is the worktree the member's branch is checked out in, if any.
func (m *member) checkout(ctx context.Context) (*git.Worktree, error) {
	return m.repo.CheckedOut(ctx, m.branchRef())
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
	if !clean {
		return nil
	}
	return m.checkClean(ctx)
}

// checkClean refuses a member whose branch is checked out with changes
// (P6): they are kept, and block promotion.
func (m *member) checkClean(ctx context.Context) error {
	wt := m.wt
	if wt == nil {
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

// promoteMembers moves every member's branch to its tip, serially. It
// refuses to start unless every member passes its preflight, checks every
// member again before each move, and never repeats a proven move: a member
// with a receipt is skipped. It stops at the first member that cannot
// move, leaving the earlier ones promoted (promotion is not atomic, P6).
func promoteMembers(ctx context.Context, env *Env, id string, ms []*member) error {
	if err := preflight(ctx, ms); err != nil {
		return err
	}
	// ready is the next mover's readying, done ahead of its turn: its
	// checkout read again (it must be clean to come along) and its intent
	// objects written. From the second mover on it runs while the member
	// before saves its receipt: after that member's move, before this
	// one's, as P6 asks of a re-check.
	var ready chan error
	for i, m := range ms {
		if m.r.State == Promoted {
			env.progress("%s: %s already at %.12s (receipt kept)", m.t.Name, m.t.Branch, m.r.Tip)
			continue // P7: no proven promotion is repeated
		}
		if ready == nil {
			ready = m.getReady(ctx, i > 0)
		}
		var err error
		if ready, err = promoteOne(ctx, env, id, ms, i, ready); err != nil {
			return err
		}
		env.progress("%s: %s %.12s -> %.12s, receipt saved", m.t.Name, m.t.Branch, m.r.Base, m.r.Tip)
		env.fault(fmt.Sprintf("after-receipt:%d", i))
	}
	return nil
}

// promoteOne moves member i once every member is re-checked and its own
// readying is done, brings its checkout along and saves its receipt; it
// returns the next mover's readying, started while the receipt is saved.
//
// The move and the receipt go through one update-ref, started before the
// re-check so that its start-up is not waited for: the move (intent and
// branch) is its first transaction, reading packed-refs fresh; the
// receipt moves only the request's own record, which no other process
// moves while the request's lock is held (git.RefSession's condition).
func promoteOne(ctx context.Context, env *Env, id string, ms []*member, i int, ready chan error) (chan error, error) {
	m := ms[i]
	session := m.repo.OpenRefSession("flume promote "+id, git.Branches)
	// Every update through the session returned its own error; closing
	// it after them ends a git process with nothing left to say.
	defer func() { _ = session.Close() }()
	m.steps = m.store.InSession(session)
	defer func() { m.steps = nil }()
	// P6: every target's position again, between moves.
	err := recheck(ctx, ms)
	if rerr := <-ready; err == nil {
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	env.fault(fmt.Sprintf("before-move:%d", i))
	wt := m.wt
	if err := m.move(ctx, id); err != nil {
		return nil, fmt.Errorf("%s: move %s: %w (run reconcile)", m.t.Name, m.t.Branch, err)
	}
	env.fault(fmt.Sprintf("after-move:%d", i))
	receipt, rp, err := m.switchWithReceipt(ctx, env, wt, i)
	if err != nil {
		return nil, err
	}
	var next chan error
	for _, o := range ms[i+1:] {
		if o.r.State != Promoted {
			next = o.getReady(ctx, true)
			break
		}
	}
	if err := m.saveReceipt(ctx, receipt, rp); err != nil {
		if next != nil {
			// The next member's readying is waited for, not used: the
			// receipt's error is what stops the promotion.
			err = errors.Join(err, <-next)
		}
		return nil, err
	}
	return next, nil
}

// switchWithReceipt brings a checked-out branch's clean work tree wt (nil
// for none) along to the moved tip, while the receipt's objects are
// written beside it; the receipt is saved only after, and only if the
// branch is still at the tip. Member i's crash point after-switch is
// between the two.
func (m *member) switchWithReceipt(ctx context.Context, env *Env, wt *git.Worktree, i int) (request.Record, *refs.Prepared, error) {
	// The receipt's objects are written while git brings the work tree
	// along; it is saved only after, and only if the branch is still at
	// the tip.
	type prepared struct {
		r   request.Record
		p   *refs.Prepared
		err error
	}
	rc := make(chan prepared, 1)
	go func() {
		r, p, err := m.prepareReceipt(ctx, env)
		rc <- prepared{r, p, err}
	}()
	if wt != nil {
		// A checked-out branch brings its clean work tree along.
		if err := m.repo.SwitchTree(ctx, wt.Path, m.r.Base, m.r.Tip); err != nil {
			<-rc
			return request.Record{}, nil, fmt.Errorf("%s: %w (run reconcile)", m.t.Name, err)
		}
	}
	receipt := <-rc
	env.fault(fmt.Sprintf("after-switch:%d", i))
	return receipt.r, receipt.p, receipt.err
}

// getReady reads the member's checkout again when clean is set, and
// writes its intent objects, in the background.
func (m *member) getReady(ctx context.Context, clean bool) chan error {
	done := make(chan error, 1)
	go func() {
		if clean {
			if err := m.checkClean(ctx); err != nil {
				done <- err
				return
			}
		}
		if m.intent != nil {
			done <- nil // prepared at the preflight
			return
		}
		done <- m.prepareIntent(ctx)
	}()
	return done
}

// recheck checks every member's position again before a move (P6).
func recheck(ctx context.Context, ms []*member) error {
	for _, o := range ms {
		if err := o.check(ctx, false, false); err != nil {
			return err
		}
	}
	return nil
}

// preflight checks every member fully before anything moves (P6), the
// members side by side, as many at a time as there are processors: each
// check is mostly a git status, and more at once only slowed each other
// (DESIGN.md, "Figures from code comments"). Meanwhile the
// intents' objects are written, ahead of each member's turn: the record
// they follow moves only with the member's own move. A failure is
// reported for the first member in promotion order that has one.
func preflight(ctx context.Context, ms []*member) error {
	errs := make([]error, len(ms))
	intentErrs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		if m.r.State != Promoted && m.intent == nil {
			wg.Go(func() { intentErrs[i] = m.prepareIntent(ctx) })
		}
	}
	lanes := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, m := range ms {
		lanes <- struct{}{}
		wg.Go(func() {
			defer func() { <-lanes }()
			errs[i] = m.check(ctx, true, true)
		})
	}
	wg.Wait()
	for _, err := range append(errs, intentErrs...) {
		if err != nil {
			return err
		}
	}
	return nil
}

// receipt verifies the live branch is at the tip and saves the receipt.
func (m *member) receipt(ctx context.Context, env *Env) error {
	r, p, err := m.prepareReceipt(ctx, env)
	if err != nil {
		return err
	}
	return m.saveReceipt(ctx, r, p)
}

// prepareReceipt writes the objects of the member's receipt record, dated
// now, without saving it.
func (m *member) prepareReceipt(ctx context.Context, env *Env) (request.Record, *refs.Prepared, error) {
	r := m.r
	r.State, r.Manual = Promoted, ""
	r.Receipt = &request.Receipt{From: r.Base, To: r.Tip, At: env.Now().UTC()}
	p, err := m.store.Prepare(ctx, m.change(r, fmt.Sprintf("receipt %.12s -> %.12s", r.Base, r.Tip)))
	if err != nil {
		return r, nil, fmt.Errorf("%s: %w", m.t.Name, err)
	}
	return r, p, nil
}

// saveReceipt saves a prepared receipt once the live branch is at the tip:
// a receipt is never saved on the record's word alone.
func (m *member) saveReceipt(ctx context.Context, r request.Record, p *refs.Prepared) error {
	at, err := m.at(ctx)
	if err != nil {
		return err
	}
	if at != m.r.Tip {
		return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("after the move %s is at %.12s, not the tip %.12s", m.t.Branch, at, m.r.Tip)}
	}
	w, err := m.writer().Commit(ctx, "", []*refs.Prepared{p})
	if err != nil {
		return fmt.Errorf("%s: %w", m.t.Name, err)
	}
	m.rec, m.r = w[0], r
	return nil
}

// Outcome is what reconcile found for one member.
type Outcome struct {
	Member string `json:"member"`
	// Step is what was settled: allocation, stage or promote.
	Step   string `json:"step,omitempty"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// reconcileMembers settles interrupted moves from evidence only (P7): a
// member whose intent was saved is compared with its endpoints: at its tip
// it gets its receipt (its work tree brought along if the crash came
// first), at its base it is pending again, anywhere else it needs a
// person. Nothing is moved, adopted or replayed.
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
