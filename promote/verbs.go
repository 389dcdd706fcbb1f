package promote

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/git/ownobjects"
	"github.com/git-flume/git-flume/internal/lockfile"
	"github.com/git-flume/git-flume/promote/inputs"
	"github.com/git-flume/git-flume/promote/request"
	"github.com/git-flume/git-flume/refs"
)

// StartOptions choose the worker and its limits.
type StartOptions struct {
	Program agent.Program
	Limits  request.Limits
	// Detach returns once the worker started (StartRequest).
	Detach bool
}

// DefaultLimits are the worker's limits when a request names none.
var DefaultLimits = request.Limits{MaxMs: (45 * time.Minute).Milliseconds(), IdleMs: (15 * time.Minute).Milliseconds()}

// StartRequest is workspace start's use case: Begin, then follow the worker
// until it settles (Observe); with opts.Detach, following is left to a
// background observer (env.StartObserver) once the worker started.
func StartRequest(ctx context.Context, env *Env, root string, data []byte, opts StartOptions) (*Workspace, error) {
	ws, err := Begin(ctx, env, root, data, opts)
	if err != nil {
		return nil, err
	}
	if opts.Detach {
		if env.StartObserver != nil {
			env.StartObserver(root, ws.ID)
		}
		return ws, nil
	}
	_, err = Observe(ctx, env, root, ws.ID, false)
	return ws, err
}

// Begin validates a request (P1, P2) and allocates it: a record in every
// member (created only if none exists), private input copies, and a worker
// worktree per member from its committed main (a dirty main does not
// matter here); then it starts the worker agent (P3). The caller observes
// the worker with Observe.
//
// A crash during allocation grants nothing: members left "allocating" are
// reported, never adopted; a new request is needed.
func Begin(ctx context.Context, env *Env, root string, data []byte, opts StartOptions) (*Workspace, error) {
	req, err := request.ParseRequest(data, root, env.CallerEnv)
	if err != nil {
		return nil, err
	}
	l, err := lock(root, req.ID, "start")
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	ws, err := openMembers(ctx, env, root, req)
	if err != nil {
		return nil, err
	}
	limits := opts.limits()
	if req.Direct() {
		return ws, startDirect(ctx, env, ws, req, opts.Program, limits)
	}
	copies, err := inputs.Copy(filepath.Join(Dir(root, req.ID), "inputs"), req.Inputs())
	if err != nil {
		return nil, err
	}
	dir := Dir(root, req.ID)
	for _, m := range ws.members {
		pinned, err := inputs.PinScript(ctx, m.repo, m.t.Base)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.t.Name, err)
		}
		m.r = request.Record{
			Schema: 1, Kind: "workspace", ID: req.ID, Member: m.t.Name, Host: env.Host, Root: root, Repository: m.t.Repo,
			Request: req, Phase: request.PhaseAllocating, Branch: m.t.Branch, Base: m.t.Base, Pinned: pinned,
			Inputs: copies, Limits: limits,
			WorkerTree: &request.Tree{Path: filepath.Join(dir, "worker", m.t.Name), Branch: workerBranch(req.ID)},
		}
		w, err := m.store.Write(ctx, []refs.Change{recordChange(nil, m.r, fmt.Sprintf("workspace %s: %s allocating from %s %.12s", req.ID, m.t.Name, m.t.Branch, m.t.Base))})
		if err != nil {
			var conflict *refs.ConflictError
			if errors.As(err, &conflict) {
				return nil, &RefusedError{Member: m.t.Name, Reason: "another start of request " + req.ID + " recorded it first"}
			}
			return nil, fmt.Errorf("%s: %w", m.t.Name, err)
		}
		m.rec = w[0]
	}
	for _, m := range ws.members {
		if err := m.addWorktree(ctx, m.r.WorkerTree, m.t.Base); err != nil {
			return ws, err
		}
	}
	prompt, err := ws.prompt()
	if err != nil {
		return ws, err
	}
	return ws, startWorker(ctx, env, ws, opts.Program, prompt, filepath.Join(dir, "worker.prompt"), paneName(ws, ""), nil)
}

// limits are the worker's limits, the defaults where none is given.
func (o StartOptions) limits() request.Limits {
	l := o.Limits
	if l.MaxMs <= 0 {
		l.MaxMs = DefaultLimits.MaxMs
	}
	if l.IdleMs <= 0 {
		l.IdleMs = DefaultLimits.IdleMs
	}
	return l
}

// openMembers opens every selected repository as a member of a new
// request: none may record the request yet (an id is used once), and each
// checkout must be on a branch, whose commit is the member's base.
func openMembers(ctx context.Context, env *Env, root string, req *request.Request) (*Workspace, error) {
	ws := &Workspace{ID: req.ID, Root: root}
	for _, name := range slices.Sorted(maps.Keys(req.Repositories)) {
		repo, err := env.Runner.OpenTop(ctx, req.Repositories[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		store := refs.New(repo, env.Kinds)
		store.Now = env.Now
		m := &member{repo: repo, store: store}
		m.t.Name, m.t.Repo = name, req.Repositories[name]
		if _, err := store.Read(ctx, RecordRef(req.ID)); err == nil {
			return nil, &RefusedError{Member: name, Reason: fmt.Sprintf("already records request %s; a request id is used once", req.ID)}
		} else if !errors.Is(err, refs.ErrNotFound) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		head, err := repo.SymbolicRef(ctx, "HEAD")
		if err != nil || head == "" {
			return nil, &RefusedError{Member: name, Reason: "its checkout is not on a branch; the main branch is the one checked out"}
		}
		m.t.Branch = head[len("refs/heads/"):]
		if m.t.Base, err = repo.ResolveRef(ctx, head); err != nil {
			return nil, fmt.Errorf("%s: %s has no commit: %w", name, m.t.Branch, err)
		}
		ws.members = append(ws.members, m)
	}
	return ws, nil
}

// begin takes the request's lifecycle lock for a verb and reads its
// members, all of them if complete is set. The caller releases the lock;
// on an error none is held.
func begin(ctx context.Context, env *Env, root, id, verb string, complete bool) (*Workspace, *lockfile.Lock, error) {
	l, err := lock(root, id, verb)
	if err != nil {
		return nil, nil, err
	}
	ws, err := load(ctx, env, root, id)
	if err == nil && complete {
		err = ws.complete()
	}
	if err != nil {
		l.Unlock()
		return ws, nil, err
	}
	return ws, l, nil
}

// addWorktree makes an owned worktree on a new branch, under the
// repository's worktree lock (L2b).
func (m *member) addWorktree(ctx context.Context, t *request.Tree, at string) error {
	l, err := lockfile.Take(ctx, filepath.Join(m.repo.CommonDir, lockfile.RepoName))
	if err != nil {
		return err
	}
	defer l.Unlock()
	if err := os.MkdirAll(filepath.Dir(t.Path), 0o700); err != nil {
		return err
	}
	if err := m.repo.AddWorktree(ctx, t.Path, t.Branch, at); err != nil {
		return fmt.Errorf("%s: %w", m.t.Name, err)
	}
	return nil
}

// RequestOptions name a workspace request, by its root and id, and carry
// the complete map the caller confirms (P5) to the verbs that move
// something on it (stage, validate, promote).
type RequestOptions struct {
	Root, ID string
	Expected Expected
}

// StageWorkspace selects the complete checked candidate map the caller confirms
// (P5) and makes an integration worktree holding it in every member. Every
// main must be clean and at its base (P6). Each member's intent is saved
// before its worktree is made; an interrupted staging is settled by
// Reconcile, never redone over what a crash left.
func StageWorkspace(ctx context.Context, env *Env, o RequestOptions) (*Workspace, error) {
	root, id, exp := o.Root, o.ID, o.Expected
	ws, l, err := begin(ctx, env, root, id, "stage", true)
	if err != nil {
		return ws, err
	}
	defer l.Unlock()
	if err := ws.phases("stage", request.PhaseChecked, request.PhaseStaged); err != nil {
		return ws, err
	}
	if err := ws.match(exp, "candidate", func(m *member) *request.Identity { return m.r.Candidate }); err != nil {
		return ws, err
	}
	if err := ws.inspect(ctx, workerTree, candidate); err != nil {
		return ws, err
	}
	if err := ws.unreserved(ctx, env); err != nil {
		return ws, err
	}
	if err := ws.mainsUnchanged(ctx); err != nil {
		return ws, err
	}
	for _, m := range ws.members {
		if ok, err := m.repo.IsAncestor(ctx, m.r.Base, m.r.Candidate.Commit); err != nil {
			return ws, err
		} else if !ok {
			return ws, &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("candidate %.12s does not descend from %s's base %.12s; never a re-merge", m.r.Candidate.Commit, m.t.Branch, m.r.Base)}
		}
	}
	for i, m := range ws.members {
		if m.r.Phase == request.PhaseStaged {
			continue
		}
		env.fault(fmt.Sprintf("stage:before-intent:%d", i))
		m.r.Phase = request.PhaseStaging
		m.r.IntegrationTree = &request.Tree{Path: filepath.Join(Dir(root, id), "integration", m.t.Name), Branch: integrationBranch(id)}
		if err := m.saveMsg(ctx, "staging: intent"); err != nil {
			return ws, err
		}
		env.fault(fmt.Sprintf("stage:after-intent:%d", i))
		if err := m.addWorktree(ctx, m.r.IntegrationTree, m.r.Candidate.Commit); err != nil {
			return ws, fmt.Errorf("%w (run reconcile)", err)
		}
		env.fault(fmt.Sprintf("stage:after-worktree:%d", i))
		if err := m.staged(ctx); err != nil {
			return ws, err
		}
		env.progress("%s: staged %.12s in %s", m.t.Name, m.r.Tip, m.r.IntegrationTree.Path)
		env.fault(fmt.Sprintf("stage:after-record:%d", i))
	}
	return ws, nil
}

func workerTree(m *member) *request.Tree      { return m.r.WorkerTree }
func integrationTree(m *member) *request.Tree { return m.r.IntegrationTree }
func candidate(m *member) *request.Identity   { return m.r.Candidate }
func staged(m *member) *request.Identity      { return m.r.Staged }

// staged records the integration worktree's identity as the member's tip,
// after checking it holds exactly the candidate, clean.
func (m *member) staged(ctx context.Context) error {
	id, dirty, err := m.identity(ctx, m.r.IntegrationTree, true)
	if err != nil {
		return err
	}
	if len(dirty) > 0 || id.Commit != m.r.Candidate.Commit || id.IndexTree != m.r.Candidate.IndexTree {
		return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("integration worktree %s does not hold the candidate %.12s cleanly; run reconcile", m.r.IntegrationTree.Path, m.r.Candidate.Commit)}
	}
	m.r.Phase, m.r.Staged, m.r.Tip, m.t.Tip = request.PhaseStaged, &id, id.Commit, id.Commit
	return m.saveMsg(ctx, fmt.Sprintf("staged %.12s", id.Commit))
}

// Validate runs the final checks on the complete integration map the
// caller confirms (P3, P5) and records the outcome in every member.
func Validate(ctx context.Context, env *Env, o RequestOptions) (*Workspace, error) {
	root, id, exp := o.Root, o.ID, o.Expected
	ws, l, err := begin(ctx, env, root, id, "validate", true)
	if err != nil {
		return ws, err
	}
	defer l.Unlock()
	if err := ws.phases("validate", request.PhaseStaged, request.PhaseValidated); err != nil {
		return ws, err
	}
	if err := ws.match(exp, "tip", staged); err != nil {
		return ws, err
	}
	env.fault("validate:before-checks")
	results, err := ws.runChecks(ctx, env, "final", ws.members[0].r.Request.FinalChecks, integrationTree, staged)
	if err != nil {
		return ws, err
	}
	ok := len(results) == len(ws.members[0].r.Request.FinalChecks)
	for _, r := range results {
		ok = ok && r.OK()
	}
	for i, m := range ws.members {
		m.r.FinalChecks = results
		msg := "validated: every final check passed"
		if ok {
			m.r.Phase = request.PhaseValidated
		} else {
			m.r.Phase, m.r.Reason = request.PhaseFailed, failure("final", results)
			msg = "failed: " + m.r.Reason
		}
		if err := m.saveMsg(ctx, msg); err != nil {
			return ws, err
		}
		env.fault(fmt.Sprintf("validate:after-record:%d", i))
	}
	return ws, nil
}

func failure(kind string, results []request.Result) string {
	r := results[len(results)-1]
	if r.Refused != "" {
		return fmt.Sprintf("%s check %s in %s refused %s", kind, request.Check{Command: r.Command, Args: r.Args}.Line(), r.Repository, r.Refused)
	}
	return fmt.Sprintf("%s check %s in %s exited %d", kind, request.Check{Command: r.Command, Args: r.Args}.Line(), r.Repository, r.Exit)
}

// PromoteWorkspace promotes the exact validated tips the caller confirms
// (P5, P6): every input and integration worktree inspected, every target
// preflighted, then each member moved serially with its intent before and
// its receipt after. A continued promotion never repeats a proven move.
func PromoteWorkspace(ctx context.Context, env *Env, o RequestOptions) (*Workspace, error) {
	root, id, exp := o.Root, o.ID, o.Expected
	ws, l, err := begin(ctx, env, root, id, "promote", true)
	if err != nil {
		return ws, err
	}
	defer l.Unlock()
	if err := ws.phases("promote", request.PhaseValidated); err != nil {
		return ws, err
	}
	if err := ws.match(exp, "tip", staged); err != nil {
		return ws, err
	}
	if err := ws.positions(ctx, integrationTree, staged); err != nil {
		return ws, err
	}
	if err := ws.unreserved(ctx, env); err != nil {
		return ws, err
	}
	return ws, promoteMembers(ctx, env, id, ws.members)
}

// Outcome of reconcile for a member, with the step it settled.
func (ws *Workspace) outcome(m *member, step string) Outcome {
	state := m.r.State
	if state == "" {
		state = m.r.Phase
	}
	reason := m.r.Manual
	if reason == "" {
		reason = m.r.Reason
	}
	return Outcome{Member: m.t.Name, Step: step, State: state, Reason: reason}
}

// ReconcileWorkspace settles what an interruption left, from evidence only
// (P7), and replays nothing: a worker whose observer died is observed once
// (its checks run if it finished); an interrupted staging is staged if its
// worktree holds exactly the candidate, pending again if nothing was made,
// manual otherwise; interrupted promotions are settled as Reconcile does.
func ReconcileWorkspace(ctx context.Context, env *Env, o RequestOptions) ([]Outcome, error) {
	root, id := o.Root, o.ID
	ws, l, err := begin(ctx, env, root, id, "reconcile", false)
	if err != nil {
		return nil, err
	}
	defer l.Unlock()
	if !ws.direct() {
		if err := ws.complete(); err != nil {
			return nil, err
		}
	}
	if slices.ContainsFunc(ws.members, func(m *member) bool { return m.r.Phase == request.PhaseWorking }) {
		if _, err := Observe(ctx, env, root, id, true); err != nil {
			return nil, err
		}
		if err := ws.refresh(ctx); err != nil {
			return nil, err
		}
	}
	if ws.direct() {
		if err := ws.reconcileDirect(ctx, env); err != nil {
			return nil, err
		}
	}
	var out []Outcome
	for i, m := range ws.members {
		switch {
		case m.r.Phase == request.PhaseAllocating:
			out = append(out, Outcome{Member: m.t.Name, Step: "allocation", State: request.PhaseAllocating, Reason: "allocation was interrupted: inspect it and make a new request; nothing is adopted"})
		case m.r.Phase == request.PhaseStaging:
			env.fault(fmt.Sprintf("reconcile:staging:%d", i))
			if err := m.reconcileStaging(ctx); err != nil {
				return out, err
			}
			out = append(out, ws.outcome(m, "stage"))
		case m.r.State == Intent:
			o, err := reconcileMembers(ctx, env, []*member{m})
			if err != nil {
				return out, err
			}
			o[0].Step = "promote"
			out = append(out, o...)
		default:
			out = append(out, ws.outcome(m, ""))
		}
	}
	return out, nil
}

// reconcileStaging compares an interrupted staging with its endpoints.
func (m *member) reconcileStaging(ctx context.Context) error {
	t := m.r.IntegrationTree
	wts, err := m.repo.Worktrees(ctx)
	if err != nil {
		return err
	}
	var wt *git.Worktree
	for i := range wts {
		if wts[i].Path == t.Path {
			wt = &wts[i]
		}
	}
	branch, err := m.repo.RefValue(ctx, "refs/heads/"+t.Branch)
	if err != nil {
		return err
	}
	_, statErr := os.Lstat(t.Path)
	switch {
	case wt == nil && branch == "" && errors.Is(statErr, os.ErrNotExist):
		// Nothing was made: pending again.
		m.r.Phase, m.r.IntegrationTree = request.PhaseChecked, nil
		return m.saveMsg(ctx, "reconciled: staging had made nothing; checked again")
	case wt != nil && !wt.Locked && wt.Branch == "refs/heads/"+t.Branch && branch == m.r.Candidate.Commit:
		if dirty, err := m.repo.Dirty(ctx, t.Path); err != nil {
			return err
		} else if len(dirty) == 0 {
			return m.staged(ctx)
		}
	}
	m.r.Phase = request.PhaseManual
	m.r.Reason = fmt.Sprintf("staging was interrupted: %s and branch %s (at %.12s) are neither absent nor exactly the candidate %.12s; inspect them and make a new request", t.Path, t.Branch, branch, m.r.Candidate.Commit)
	return m.saveMsg(ctx, "reconciled: manual")
}

// Abort ends the request's worker and verifies it gone, and marks every
// member not promoted aborted. All git work is retained: worktrees,
// branches and records. An interrupted promotion is reconciled first.
func Abort(ctx context.Context, env *Env, o RequestOptions) (*Workspace, error) {
	root, id := o.Root, o.ID
	ws, l, err := begin(ctx, env, root, id, "abort", false)
	if err != nil {
		return ws, err
	}
	defer l.Unlock()
	for _, m := range ws.members {
		if m.r.State == Intent {
			return ws, &RefusedError{Member: m.t.Name, Reason: "a promotion was interrupted here; run reconcile first"}
		}
	}
	// Marked first, so the observer stops at its next reading and takes
	// the ended worker for what it is.
	for _, m := range ws.members {
		err := m.update(ctx, "aborted; git work retained", func(r *request.Record) bool {
			if r.State == Promoted || r.Phase == request.PhaseCleaned || r.Phase == request.PhaseAborted || r.Phase == request.PhaseDone {
				return false
			}
			r.Phase, r.Reason = request.PhaseAborted, "aborted in phase "+r.Phase
			return true
		})
		if err != nil {
			return ws, err
		}
	}
	ended, endErr := endWorker(ctx, env, ws)
	if !ended {
		return ws, fmt.Errorf("the worker could not be proved gone; it stays visible for recovery: %w", endErr)
	}
	for _, m := range ws.members {
		err := m.update(ctx, "worker ended", func(r *request.Record) bool {
			if r.Worker == nil || r.Worker.Ended {
				return false
			}
			cp := *r.Worker
			cp.Ended = true
			r.Worker = &cp
			return true
		})
		if err != nil {
			return ws, err
		}
	}
	if ws.direct() {
		return ws, ws.finishDirect(ctx, env, "", "", "reported; its workers are stopped")
	}
	_, err = ws.takeWorkerObjects(ctx) // the retained work readable by git by hand too
	return ws, err
}

// Cleanup removes a fully promoted request's owned resources (P8): each
// worktree only if it is exactly where and what the record says and clean,
// each branch only at the commit recorded (a compare-and-swap delete), then
// the private folder. Anything else is refused and retained.
func Cleanup(ctx context.Context, env *Env, o RequestOptions) (*Workspace, error) {
	root, id := o.Root, o.ID
	ws, l, err := begin(ctx, env, root, id, "cleanup", true)
	if err != nil {
		return ws, err
	}
	defer l.Unlock()
	if ws.direct() {
		return ws, ws.cleanupDirect(ctx, env)
	}
	for _, m := range ws.members {
		if m.r.Phase == request.PhaseCleaned {
			continue
		}
		if m.r.State != Promoted || m.r.Receipt == nil {
			return ws, &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("is %s, not promoted; only a fully promoted request is cleaned, and failed or aborted work is retained", orPhase(m.r))}
		}
		if at, err := m.at(ctx); err != nil {
			return ws, err
		} else if at != m.r.Tip {
			return ws, &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("%s is at %.12s, not its promoted tip %.12s; retained", m.t.Branch, at, m.r.Tip)}
		}
	}
	for _, m := range ws.members {
		if m.r.Phase == request.PhaseCleaned {
			continue
		}
		for _, o := range []struct {
			t   *request.Tree
			tip string
		}{{m.r.WorkerTree, m.r.Candidate.Commit}, {m.r.IntegrationTree, m.r.Tip}} {
			if err := m.removeOwned(ctx, o.t, o.tip); err != nil {
				return ws, err
			}
		}
		m.r.Phase = request.PhaseCleaned
		if err := m.saveMsg(ctx, "cleaned: owned worktrees and branches removed"); err != nil {
			return ws, err
		}
		env.progress("%s: cleaned", m.t.Name)
	}
	dir := Dir(root, id)
	writable(dir)
	for _, sub := range []string{"inputs", "logs", "worker", "integration"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return ws, err
		}
	}
	return ws, nil
}

func orPhase(r request.Record) string {
	if r.State != "" && r.State != Pending {
		return r.State
	}
	return r.Phase
}

// removeOwned removes a worktree that is exactly owned and clean, then its
// branch at the recorded commit. A worktree or branch already gone (an
// earlier cleanup was interrupted) is fine; one that differs is refused.
func (m *member) removeOwned(ctx context.Context, t *request.Tree, commit string) error {
	if t == nil {
		return nil
	}
	wts, err := m.repo.Worktrees(ctx)
	if err != nil {
		return err
	}
	for _, wt := range wts {
		if wt.Path != t.Path {
			continue
		}
		if wt.Branch != "refs/heads/"+t.Branch || wt.Head != commit {
			return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("worktree %s has %s at %.12s, not %s at %.12s: not exactly owned, retained", t.Path, wt.Branch, wt.Head, t.Branch, commit)}
		}
		if dirty, err := m.repo.Dirty(ctx, t.Path); err != nil {
			return err
		} else if len(dirty) > 0 {
			return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("worktree %s has changes (%s): retained", t.Path, dirty[0])}
		}
		own := m.ownObjects(t)
		if _, err := ownobjects.Import(ctx, m.repo, own); err != nil {
			return fmt.Errorf("%s: %w", m.t.Name, err)
		}
		if err := m.repo.RemoveWorktree(ctx, t.Path, false); err != nil {
			return fmt.Errorf("%s: %w", m.t.Name, err)
		}
		_ = os.RemoveAll(own) // taken in above; "" names nothing
	}
	at, err := m.repo.RefValue(ctx, "refs/heads/"+t.Branch)
	if err != nil || at == "" {
		return err
	}
	if at != commit {
		return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("branch %s is at %.12s, not %.12s: retained", t.Branch, at, commit)}
	}
	return m.repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Delete, Name: "refs/heads/" + t.Branch, Old: commit}})
}
