package promote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/lockfile"
	"github.com/git-flume/git-flume/promote/inputs"
	"github.com/git-flume/git-flume/promote/request"
	"github.com/git-flume/git-flume/refs"
)

// Dir is a request's private folder in the workspace root: its input
// copies, prompts, check logs, locks and owned worktrees.
func Dir(root, id string) string { return filepath.Join(root, ".flume", "workspaces", id) }

// Branch names of a request's owned worktrees in every member.
func workerBranch(id string) string      { return "flume-ws/" + id + "/worker" }
func integrationBranch(id string) string { return "flume-ws/" + id + "/integration" }

// NotFoundError is a request no member records.
type NotFoundError struct{ ID, Root string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("workspace request %q: no repository under %s records it", e.ID, e.Root)
}

// Workspace is a request as its members record it.
type Workspace struct {
	ID, Root string
	members  []*member // by name
}

// load finds the request's members among the root's direct children (the
// records are the truth, not a file beside them) and reads their records.
func load(ctx context.Context, env *Env, root, id string) (*Workspace, error) {
	if err := refs.ValidateName("request id", id); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	ws := &Workspace{ID: id, Root: root}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if info, err := os.Lstat(filepath.Join(dir, ".git")); err != nil || !info.IsDir() || !e.IsDir() {
			continue
		}
		repo, err := env.Runner.OpenTop(ctx, dir)
		if err != nil {
			continue
		}
		store := refs.New(repo, env.Kinds)
		store.Now = env.Now
		rec, err := store.Read(ctx, RecordRef(id))
		if errors.Is(err, refs.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		m := &member{repo: repo, store: store, rec: rec}
		if err := rec.Decode(&m.r); err != nil {
			return nil, err
		}
		m.t = Target{Name: m.r.Member, Repo: dir, Branch: m.r.Branch, Base: m.r.Base, Tip: m.r.Tip}
		ws.members = append(ws.members, m)
	}
	if len(ws.members) == 0 {
		return nil, &NotFoundError{ID: id, Root: root}
	}
	sort.Slice(ws.members, func(i, j int) bool { return ws.members[i].t.Name < ws.members[j].t.Name })
	return ws, nil
}

// complete refuses a request some selected member has no record of: its
// allocation was interrupted, and is never adopted.
func (ws *Workspace) complete() error {
	req := ws.members[0].r.Request
	if req == nil {
		return &RefusedError{Member: ws.members[0].t.Name, Reason: "the record holds no request"}
	}
	have := map[string]bool{}
	for _, m := range ws.members {
		have[m.t.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(req.Repositories)) {
		if !have[name] {
			return &RefusedError{Member: name, Reason: "has no record of request " + ws.ID + ": its allocation was interrupted; inspect it and make a new request"}
		}
	}
	return nil
}

// refresh reads every member's record again.
func (ws *Workspace) refresh(ctx context.Context) error {
	for _, m := range ws.members {
		rec, err := m.store.Read(ctx, m.rec.Ref)
		if err != nil {
			return fmt.Errorf("%s: %w", m.t.Name, err)
		}
		var r request.Record
		if err := rec.Decode(&r); err != nil {
			return err
		}
		m.rec, m.r = rec, r
		m.t.Tip = r.Tip
	}
	return nil
}

// saveAll saves every member's record after edit changed it.
func (ws *Workspace) saveAll(ctx context.Context, msg string, edit func(m *member)) error {
	for _, m := range ws.members {
		edit(m)
		if err := m.saveMsg(ctx, msg); err != nil {
			return err
		}
	}
	return nil
}

func (m *member) saveMsg(ctx context.Context, msg string) error {
	w, err := m.store.Write(ctx, []refs.Change{recordChange(m.rec, m.r, fmt.Sprintf("workspace %s: %s %s", m.r.ID, m.t.Name, msg))})
	if err != nil {
		return fmt.Errorf("%s: %w", m.t.Name, err)
	}
	m.rec = w[0]
	return nil
}

// update is a read-decide-write step on a member's record under the
// store's retry policy: edit decides from the record as last read; a record
// moved meanwhile is read again and edit decides again.
func (m *member) update(ctx context.Context, msg string, edit func(r *request.Record) bool) error {
	reread := false
	return refs.DefaultRetry.Retry(ctx, func(ctx context.Context) error {
		if reread {
			rec, err := m.store.Read(ctx, m.rec.Ref)
			if err != nil {
				return err
			}
			var r request.Record
			if err := rec.Decode(&r); err != nil {
				return err
			}
			m.rec, m.r = rec, r
		}
		reread = true
		if !edit(&m.r) {
			return nil
		}
		return m.saveMsg(ctx, msg)
	})
}

// lock takes the request's lifecycle lock: one verb at a time changes a
// request. A second one is refused at once, naming the request.
func lock(root, id, verb string) (*lockfile.Lock, error) {
	dir := Dir(root, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	l, err := lockfile.TryTake(filepath.Join(dir, "lock"))
	if errors.Is(err, lockfile.ErrBusy) {
		return nil, &RefusedError{Member: id, Reason: "another git flume is working on this request; " + verb + " again after it ends (see workspace status)"}
	}
	return l, err
}

// phases refuses unless every member is in one of the allowed phases.
func (ws *Workspace) phases(verb string, allowed ...string) error {
	if ws.direct() {
		return &RefusedError{Member: ws.ID, Reason: "is direct work: it has no checked integration, so " + verb + " does not apply"}
	}
	for _, m := range ws.members {
		ok := false
		for _, a := range allowed {
			if m.r.Phase == a {
				ok = true
			}
		}
		if !ok {
			reason := fmt.Sprintf("is %s; %s needs %v", m.r.Phase, verb, allowed)
			switch m.r.Phase {
			case request.PhaseStaging:
				reason = "staging was interrupted here; run reconcile first"
			case request.PhaseFailed, request.PhaseBlocked, request.PhaseAborted, request.PhaseManual:
				reason = fmt.Sprintf("is %s (%s); its work is retained, and a new request is needed", m.r.Phase, m.r.Reason)
			}
			return &RefusedError{Member: m.t.Name, Reason: reason}
		}
	}
	return nil
}

// Expected is a caller's complete map of the identities it saw (P5).
type Expected map[string]request.Identity

// ParseExpected reads an --expected map; unknown fields and empty values
// are refused.
func ParseExpected(data []byte) (Expected, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var e Expected
	if err := dec.Decode(&e); err != nil {
		return nil, request.Invalid("expected", "not a map of repository to {branch, commit, indexTree, committedTree}: %v", err)
	}
	for _, name := range slices.Sorted(maps.Keys(e)) {
		id := e[name]
		for field, v := range map[string]string{"branch": id.Branch, "commit": id.Commit, "indexTree": id.IndexTree, "committedTree": id.CommittedTree} {
			if v == "" {
				return nil, request.Invalid("expected."+name+"."+field, "required: every repository needs its exact branch, commit, index tree and committed tree")
			}
		}
	}
	return e, nil
}

// match compares a complete expected map with what each member records:
// a partial map is refused as invalid, a different value as refused.
func (ws *Workspace) match(exp Expected, what string, get func(*member) *request.Identity) error {
	for _, m := range ws.members {
		if _, ok := exp[m.t.Name]; !ok {
			return request.Invalid("expected", "repository %q is missing; partial maps are refused", m.t.Name)
		}
	}
	if len(exp) != len(ws.members) {
		for _, name := range slices.Sorted(maps.Keys(exp)) {
			if ws.member(name) == nil {
				return request.Invalid("expected."+name, "not a repository of request %s", ws.ID)
			}
		}
	}
	for _, m := range ws.members {
		have := get(m)
		if have == nil {
			return &RefusedError{Member: m.t.Name, Reason: "has no " + what + " yet"}
		}
		if err := differ(m.t.Name, what, exp[m.t.Name], *have); err != nil {
			return err
		}
	}
	return nil
}

func differ(name, what string, want, have request.Identity) error {
	for _, f := range [][3]string{
		{"branch", want.Branch, have.Branch}, {"commit", want.Commit, have.Commit},
		{"indexTree", want.IndexTree, have.IndexTree}, {"committedTree", want.CommittedTree, have.CommittedTree},
	} {
		if f[1] != f[2] {
			return &RefusedError{Member: name, Reason: fmt.Sprintf("%s %s is %s, expected %s", what, f[0], f[2], f[1])}
		}
	}
	return nil
}

func (ws *Workspace) member(name string) *member {
	for _, m := range ws.members {
		if m.t.Name == name {
			return m
		}
	}
	return nil
}

// identity reads a worktree's live identity and what is dirty in it. The
// branch, commit and committed tree are read in process; git status says
// what is dirty. indexTree writes the index's tree too (one more git
// process); without it, a clean worktree's index tree is its committed
// tree, which git status has just compared it with.
func (m *member) identity(ctx context.Context, t *request.Tree, indexTree bool) (request.Identity, []string, error) {
	id := request.Identity{Branch: t.Branch}
	branch, err := m.repo.WorktreeBranch(t.Path)
	if errors.Is(err, git.ErrNotExist) {
		return id, nil, &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("worktree %s is gone", t.Path)}
	} else if err != nil {
		return id, nil, err
	}
	if branch != "refs/heads/"+t.Branch {
		return id, nil, &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("worktree %s has %q checked out, expected %s", t.Path, branch, t.Branch)}
	}
	if id.Commit, err = m.repo.RefValue(ctx, "refs/heads/"+t.Branch); err != nil || id.Commit == "" {
		return id, nil, fmt.Errorf("%s: branch %s: %w", m.t.Name, t.Branch, errors.Join(err, git.ErrNotExist))
	}
	if id.CommittedTree, err = m.repo.TreeOf(ctx, id.Commit); err != nil {
		return id, nil, err
	}
	dirty, err := m.repo.Dirty(ctx, t.Path)
	if err != nil {
		return id, nil, err
	}
	switch {
	case indexTree:
		id.IndexTree, err = m.repo.IndexTree(ctx, t.Path)
	case len(dirty) == 0:
		id.IndexTree = id.CommittedTree
	}
	return id, dirty, err
}

// positions checks each member's worktree is still on its branch at the
// recorded commit, and every input unchanged (P2): what promotion needs of
// the integration set, whose commits, not files, are promoted.
func (ws *Workspace) positions(ctx context.Context, tree func(*member) *request.Tree, want func(*member) *request.Identity) error {
	for _, m := range ws.members {
		t, w := tree(m), want(m)
		if t == nil || w == nil {
			return &RefusedError{Member: m.t.Name, Reason: "has no worktree for this step"}
		}
		branch, err := m.repo.WorktreeBranch(t.Path)
		if err != nil || branch != "refs/heads/"+t.Branch {
			return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("worktree %s is not on %s (%q, %v)", t.Path, t.Branch, branch, err)}
		}
		if at, err := m.repo.RefValue(ctx, "refs/heads/"+t.Branch); err != nil {
			return err
		} else if at != w.Commit {
			return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("branch %s is at %.12s, not the validated %.12s", t.Branch, at, w.Commit)}
		}
	}
	return ws.inputsUnchanged()
}

// inspect checks the complete set (P2, P3, P4): every member's worktree at
// exactly its recorded identity and clean, tracked and untracked; its
// pinned test script unchanged; every input's source and copy unchanged.
func (ws *Workspace) inspect(ctx context.Context, tree func(*member) *request.Tree, want func(*member) *request.Identity) error {
	// Members are independent repositories: read them all at once, and
	// report the first problem in member order.
	errs := make([]error, len(ws.members))
	var wg sync.WaitGroup
	for i, m := range ws.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.inspect(ctx, tree(m), want(m))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return ws.inputsUnchanged()
}

// inputsUnchanged refuses when an input's source or copy changed (P2).
func (ws *Workspace) inputsUnchanged() error {
	var changed *inputs.ChangedError
	if err := inputs.Verify(ws.members[0].r.Inputs); errors.As(err, &changed) {
		return &RefusedError{Member: "input " + changed.Name, Reason: changed.Reason}
	} else if err != nil {
		return err
	}
	return nil
}

func (m *member) inspect(ctx context.Context, t *request.Tree, w *request.Identity) error {
	if t == nil {
		return &RefusedError{Member: m.t.Name, Reason: "has no worktree for this step"}
	}
	have, dirty, err := m.identity(ctx, t, false)
	if err != nil {
		return err
	}
	if len(dirty) > 0 {
		return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("worktree %s is not clean (%s)", t.Path, dirty[0])}
	}
	if w != nil {
		if err := differ(m.t.Name, "worktree "+t.Path, *w, have); err != nil {
			return err
		}
	}
	return checkPinned(m, t.Path)
}

// mainsUnchanged refuses unless every main branch is at its base and its
// checkout clean (P6): dirty main files are preserved and block staging
// and promotion.
func (ws *Workspace) mainsUnchanged(ctx context.Context) error {
	for _, m := range ws.members {
		at, err := m.at(ctx)
		if err != nil {
			return err
		}
		if at != m.r.Base {
			return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("%s is at %.12s, not its base %.12s: staging and promotion need every main unchanged", m.t.Branch, at, m.r.Base)}
		}
		wt, err := m.checkout(ctx)
		if err != nil || wt == nil {
			return err
		}
		dirty, err := m.repo.Dirty(ctx, wt.Path)
		if err != nil {
			return err
		}
		if len(dirty) > 0 {
			return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("%s is checked out at %s with changes (%s); they are kept and block staging and promotion", m.t.Branch, wt.Path, dirty[0])}
		}
	}
	return nil
}

// unreserved refuses while direct work holds a member's checkout: staging
// and promotion need every main unchanged until they are done.
func (ws *Workspace) unreserved(ctx context.Context, env *Env) error {
	for _, m := range ws.members {
		_, res, err := m.reservation(ctx, env.Host)
		if err != nil {
			return err
		}
		if res == nil || res.Request == ws.ID {
			continue
		}
		if held, why, err := held(ctx, env, res.Root, res.Request); err != nil {
			return err
		} else if held {
			return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("its checkout is reserved by direct request %s (%s); staging and promotion wait for it", res.Request, why)}
		}
	}
	return nil
}
