package promote

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/template"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/lockfile"
	"github.com/git-flume/git-flume/promote/inputs"
	"github.com/git-flume/git-flume/promote/request"
	"github.com/git-flume/git-flume/refs"
)

// Direct work (P9–P11, seed 001): a request of mode "direct" runs its tasks one
// after another, a fresh worker each, in the selected checkouts
// themselves. A request with a changeset task writes: it reserves the
// workspace and every selected checkout together, before anything else is
// made, and holds them until every worker it started is proved stopped; a
// conflict in one member refuses the whole reservation. A request of text
// tasks only reads and reserves nothing; instead its result warns of every
// checkout that changed while it was read. Each member ends with a report
// of what became of its checkout. There is no integration, no rollback
// and no sandbox.

//go:embed prompts/direct.md
var directPromptText string

var directPrompt = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("direct").Parse(directPromptText))
})

func (ws *Workspace) direct() bool { return ws.members[0].r.Request.Direct() }

// program resolves a later task's worker program by the name the first
// worker ran.
func (env *Env) program(root, name string) (agent.Program, error) {
	if env.Program != nil {
		return env.Program(root, name)
	}
	return agent.ResolveProgram(name, nil)
}

// startDirect allocates a direct request over its opened members and
// starts its first task's worker. A write request first reserves the
// workspace, then checks every member for a conflict before it writes
// anything (the whole reservation is refused on one), then records each
// member together with its reservation in one transaction.
func startDirect(ctx context.Context, env *Env, ws *Workspace, req *request.Request, prog agent.Program, limits request.Limits) error {
	writes := req.Writes()
	if writes {
		if err := reserveWorkspace(ctx, env, ws.Root, req.ID); err != nil {
			return err
		}
		env.fault("direct:workspace-reserved")
	}
	stale := make([]*refs.Record, len(ws.members))
	for i, m := range ws.members {
		var err error
		if stale[i], err = m.admit(ctx, env, ws.Root, writes); err != nil {
			return errors.Join(err, releaseWorkspace(ctx, ws.Root, req.ID))
		}
	}
	copies, err := inputs.Copy(filepath.Join(Dir(ws.Root, req.ID), "inputs"), req.Inputs())
	if err != nil {
		return errors.Join(err, releaseWorkspace(ctx, ws.Root, req.ID))
	}
	now := env.Now().UTC()
	for i, m := range ws.members {
		start, err := m.found(ctx)
		if err != nil {
			return errors.Join(err, ws.rollBack(ctx, env, i))
		}
		m.r = request.Record{
			Schema: 1, Kind: "workspace", ID: req.ID, Member: m.t.Name, Host: env.Host, Root: ws.Root, Repository: m.t.Repo,
			Request: req, Phase: request.PhaseAllocating, Branch: m.t.Branch, Base: m.t.Base, Inputs: copies, Limits: limits,
			WorkerTree: &request.Tree{Path: m.t.Repo, Branch: m.t.Branch}, Start: start,
		}
		changes := []refs.Change{recordChange(nil, m.r, fmt.Sprintf("workspace %s: %s, direct work from %s %.12s", req.ID, m.t.Name, m.t.Branch, m.t.Base))}
		if writes {
			changes = append(changes, refs.Change{Ref: request.ReservationRef(env.Host), Old: stale[i], Message: "reserved for direct request " + req.ID,
				State: request.Reservation{Schema: 1, Kind: "reservation", Request: req.ID, Root: ws.Root, Host: env.Host, At: now}})
		}
		w, err := m.store.Write(ctx, changes)
		if err != nil {
			var conflict *refs.ConflictError
			if errors.As(err, &conflict) {
				err = &RefusedError{Member: m.t.Name, Reason: "was reserved or recorded by another request meanwhile; the whole reservation is refused"}
			}
			return errors.Join(err, ws.rollBack(ctx, env, i))
		}
		m.rec = w[0]
		env.fault(fmt.Sprintf("direct:recorded:%d", i))
	}
	return ws.startTask(ctx, env, 0, prog)
}

// found reads the member's checkout as direct work finds it.
func (m *member) found(ctx context.Context) (*request.Checkout, error) {
	return m.checkoutAt(ctx, m.t.Base)
}

// checkoutAt reads the member's checkout, its branch at commit.
func (m *member) checkoutAt(ctx context.Context, commit string) (*request.Checkout, error) {
	dirty, err := m.repo.Dirty(ctx, m.t.Repo)
	if err != nil {
		return nil, err
	}
	tree, err := m.repo.SnapshotTree(ctx, m.t.Repo)
	if err != nil {
		return nil, err
	}
	return &request.Checkout{Branch: m.t.Branch, Commit: commit, Dirty: dirty, Tree: tree}, nil
}

// admit refuses a member a write request may not reserve: its checkout is
// reserved by a request whose workers are not proved stopped, or a checked
// request waits to promote into it. It returns the reservation left by an
// ended request, which the request's own record replaces.
func (m *member) admit(ctx context.Context, env *Env, root string, writes bool) (*refs.Record, error) {
	if !writes {
		return nil, nil
	}
	rec, res, err := m.reservation(ctx, env.Host)
	if err != nil {
		return nil, err
	}
	if res != nil {
		if held, why, err := held(ctx, env, res.Root, res.Request); err != nil {
			return nil, err
		} else if held {
			return nil, &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("its checkout is reserved by direct request %s (%s); the whole reservation is refused", res.Request, why)}
		}
	}
	others, _, err := m.store.List(ctx, RecordRef(""))
	if err != nil {
		return nil, err
	}
	for _, o := range others {
		var r request.Record
		if o.Decode(&r) != nil || r.Request.Direct() {
			continue
		}
		if awaitsPromotion(r) {
			return nil, &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("checked request %s is %s and promotes into %s next; direct work there would change what it promotes", r.ID, orPhase(r), r.Branch)}
		}
	}
	return rec, nil
}

// awaitsPromotion reports whether a checked request's member needs its main
// unchanged from now until it is promoted.
func awaitsPromotion(r request.Record) bool {
	switch {
	case r.State == Promoted || r.Phase == request.PhaseCleaned:
		return false
	case r.State == Intent:
		return true
	}
	return r.Phase == request.PhaseStaging || r.Phase == request.PhaseStaged || r.Phase == request.PhaseValidated
}

// reservation reads this host's reservation of the member's checkout; nil
// when there is none.
func (m *member) reservation(ctx context.Context, host string) (*refs.Record, *request.Reservation, error) {
	rec, err := m.store.Read(ctx, request.ReservationRef(host))
	if errors.Is(err, refs.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", m.t.Name, err)
	}
	var res request.Reservation
	if err := rec.Decode(&res); err != nil {
		return nil, nil, err
	}
	return rec, &res, nil
}

// held reports whether direct request id still holds what it reserved,
// and why: a verb of it is running (its lifecycle lock is taken), or a
// member records a worker not proved stopped (phase working, or a worker
// not recorded ended). A request no member records holds nothing: its
// allocation was refused or rolled back.
func held(ctx context.Context, env *Env, root, id string) (bool, string, error) {
	if _, err := os.Stat(Dir(root, id)); err == nil {
		l, err := lockfile.TryTake(filepath.Join(Dir(root, id), "lock"))
		if errors.Is(err, lockfile.ErrBusy) {
			return true, "a git flume is working on it", nil
		}
		if err != nil {
			return false, "", err
		}
		defer l.Unlock()
	}
	ws, err := load(ctx, env, root, id)
	var nf *NotFoundError
	if errors.As(err, &nf) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	for _, m := range ws.members {
		switch w := m.r.Worker; {
		case m.r.Phase == request.PhaseWorking:
			return true, fmt.Sprintf("working; if its worker is gone, git flume workspace reconcile --id %s settles it", id), nil
		case w != nil && !w.Ended:
			return true, fmt.Sprintf("%s, its worker not proved stopped; git flume workspace abort --id %s ends it", m.r.Phase, id), nil
		}
	}
	return false, "", nil
}

// rollBack undoes the allocation of the first n members after a refusal:
// each record and reservation it wrote is deleted if it is still as
// written; the workspace's reservation goes last.
func (ws *Workspace) rollBack(ctx context.Context, env *Env, n int) error {
	var errs []error
	for _, m := range ws.members[:n] {
		changes := []refs.Change{m.rec.Deletion("refused: allocation rolled back")}
		if rec, res, err := m.reservation(ctx, env.Host); err != nil {
			errs = append(errs, err)
		} else if res != nil && res.Request == ws.ID {
			changes = append(changes, rec.Deletion("refused: reservation rolled back"))
		}
		if _, err := m.store.Write(ctx, changes); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.t.Name, err))
		}
	}
	errs = append(errs, releaseWorkspace(ctx, ws.Root, ws.ID))
	return errors.Join(errs...)
}

// workspaceReservation is the file that reserves the workspace itself.
func workspaceReservation(root string) string { return filepath.Join(root, ".flume", "reservation") }

// reserveWorkspace reserves the workspace for request id, under the
// workspace's reservation lock: a reservation of a request that holds
// nothing any more is replaced, one that still holds refuses the request.
func reserveWorkspace(ctx context.Context, env *Env, root, id string) error {
	path := workspaceReservation(root)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	l, err := lockfile.Take(ctx, path+".lock")
	if err != nil {
		return err
	}
	defer l.Unlock()
	if data, err := os.ReadFile(path); err == nil {
		var res request.Reservation
		if err := json.Unmarshal(data, &res); err == nil && refs.ValidateName("request id", res.Request) == nil {
			if held, why, err := held(ctx, env, root, res.Request); err != nil {
				return err
			} else if held {
				return &RefusedError{Member: filepath.Base(root), Reason: fmt.Sprintf("the workspace is reserved by direct request %s (%s)", res.Request, why)}
			}
		}
		// An unreadable file was left by a crash while it was written:
		// the rename below is atomic, so only a torn copy of ours is.
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	data, _ := json.Marshal(request.Reservation{Schema: 1, Kind: "reservation", Request: id, Root: root, Host: env.Host, At: env.Now().UTC()})
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// releaseWorkspace removes the workspace's reservation if request id holds
// it.
func releaseWorkspace(ctx context.Context, root, id string) error {
	path := workspaceReservation(root)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	l, err := lockfile.Take(ctx, path+".lock")
	if err != nil {
		return err
	}
	defer l.Unlock()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	var res request.Reservation
	if json.Unmarshal(data, &res) != nil || res.Request != id {
		return nil
	}
	return os.Remove(path)
}

// release gives up what the request reserved, once its workers are proved
// stopped: each member's reservation, then the workspace's. Each step is
// a compare-and-swap or a check of the holder, so it may run again.
func (ws *Workspace) release(ctx context.Context, env *Env) error {
	for i, m := range ws.members {
		rec, res, err := m.reservation(ctx, m.r.Host)
		if err != nil {
			return err
		}
		if res == nil || res.Request != ws.ID {
			continue
		}
		if _, err := m.store.Write(ctx, []refs.Change{rec.Deletion("released by direct request " + ws.ID)}); err != nil {
			return fmt.Errorf("%s: %w", m.t.Name, err)
		}
		env.fault(fmt.Sprintf("direct:released:%d", i))
	}
	return releaseWorkspace(ctx, ws.Root, ws.ID)
}

// startTask starts task i's worker with program prog; the record names
// the task before the worker starts.
func (ws *Workspace) startTask(ctx context.Context, env *Env, i int, prog agent.Program) error {
	prompt, err := ws.directPrompt(i)
	if err != nil {
		return err
	}
	tasks, id := ws.members[0].r.Tasks, ws.members[0].r.Request.Tasks[i].ID
	file := filepath.Join(Dir(ws.Root, ws.ID), "task-"+id+".prompt")
	starts := map[string]*request.Checkout{}
	for _, m := range ws.members {
		if starts[m.t.Name], err = m.current(ctx); err != nil {
			return err
		}
	}
	return startWorker(ctx, env, ws, prog, prompt, file, paneName(ws, id), func(m *member) {
		m.r.Task, m.r.Tasks, m.r.TaskStart = i, tasks, starts[m.t.Name]
	})
}

// current reads the member's checkout with its branch where it is now.
func (m *member) current(ctx context.Context) (*request.Checkout, error) {
	at, err := m.repo.ResolveRef(ctx, "refs/heads/"+m.t.Branch)
	if err != nil {
		return nil, fmt.Errorf("%s: branch %s: %w", m.t.Name, m.t.Branch, err)
	}
	return m.checkoutAt(ctx, at)
}

// textTaskWrote says how the checkouts changed while the current task, a
// text task (it reads and answers), ran: nil when it is a changeset task
// or nothing changed. A read-only task that wrote is told, never taken
// for a clean answer.
func (ws *Workspace) textTaskWrote(ctx context.Context) ([]string, error) {
	first := ws.members[0].r
	if first.Request.Tasks[first.Task].Kind != "text" {
		return nil, nil
	}
	var wrote []string
	for _, m := range ws.members {
		from := m.r.TaskStart
		if from == nil {
			continue // recorded before tasks kept where they started
		}
		now, err := m.current(ctx)
		switch {
		case err != nil:
			return nil, err
		case now.Commit != from.Commit:
			wrote = append(wrote, fmt.Sprintf("%s: %s moved from %.12s to %.12s", m.t.Name, from.Branch, from.Commit, now.Commit))
		case now.Tree != from.Tree:
			wrote = append(wrote, m.t.Name+": its files changed")
		}
	}
	return wrote, nil
}

func (ws *Workspace) directPrompt(i int) (string, error) {
	first := ws.members[0].r
	req := first.Request
	type named struct{ Name, Path, Branch string }
	data := struct {
		ID, Root, Goal string
		Task           request.Task
		N, Total       int
		Repositories   []named
		Inputs         []named
		Earlier        []request.TaskResult
	}{ID: ws.ID, Root: ws.Root, Goal: req.Goal, Task: req.Tasks[i], N: i + 1, Total: len(req.Tasks)}
	for _, m := range ws.members {
		data.Repositories = append(data.Repositories, named{m.t.Name, m.t.Repo, m.r.Branch})
	}
	for _, name := range slices.Sorted(maps.Keys(first.Inputs)) {
		data.Inputs = append(data.Inputs, named{Name: name, Path: first.Inputs[name].Copy})
	}
	for _, t := range first.Tasks {
		if slices.Contains(req.Tasks[i].ContextFrom, t.ID) {
			data.Earlier = append(data.Earlier, t)
		}
	}
	var b strings.Builder
	if err := directPrompt().Execute(&b, data); err != nil {
		return "", err
	}
	return b.String() + "\n" + agent.StandingOrders + "\n", nil
}

// taskResult is what the current task's worker, delivered, leaves in the
// record: its session, its last message, and how it wrote when it should
// only have read.
func (ws *Workspace) taskResult(w request.Worker, answer string, wrote []string) []request.TaskResult {
	first := ws.members[0].r
	t := first.Request.Tasks[first.Task]
	if len(answer) > request.MaxAnswer {
		answer = answer[:request.MaxAnswer]
	}
	res := request.TaskResult{ID: t.ID, Kind: t.Kind, Program: w.Program, Session: w.Session, Answer: answer, Wrote: wrote}
	return append(slices.Clip(first.Tasks[:min(first.Task, len(first.Tasks))]), res)
}

// nextTask goes on after a task's worker delivered and ended: the next
// task's worker starts, or, after the last task, the request is done. It
// reports whether the request settled.
func (ws *Workspace) nextTask(ctx context.Context, env *Env) (bool, error) {
	env.fault("direct:delivered")
	first := ws.members[0].r
	if len(first.Tasks) != first.Task+1 {
		return true, fmt.Errorf("request %s: task %d delivered, but %d task results are recorded", ws.ID, first.Task, len(first.Tasks))
	}
	if first.Task+1 == len(first.Request.Tasks) {
		return true, ws.finishDirect(ctx, env, request.PhaseDone, "", fmt.Sprintf("done: %d tasks delivered", len(first.Tasks)))
	}
	prog, err := env.program(ws.Root, first.Worker.Program)
	if err != nil {
		reason := fmt.Sprintf("task %s's worker could not start: %v", first.Request.Tasks[first.Task+1].ID, err)
		return true, ws.finishDirect(ctx, env, request.PhaseFailed, reason, "failed: "+reason)
	}
	return false, ws.startTask(ctx, env, first.Task+1, prog)
}

// finishDirect ends direct work whose workers are all proved stopped:
// each member's report is recorded with the phase (phase "" keeps the one
// recorded), then what the request reserved is released.
func (ws *Workspace) finishDirect(ctx context.Context, env *Env, phase, reason, msg string) error {
	reports := make([]*request.Report, len(ws.members))
	for i, m := range ws.members {
		if m.r.Report != nil {
			reports[i] = m.r.Report // what the request ended with stays
			continue
		}
		var err error
		if reports[i], err = m.report(ctx); err != nil {
			return err
		}
	}
	for i, m := range ws.members {
		if phase != "" {
			m.r.Phase, m.r.Reason = phase, reason
		}
		m.r.Report = reports[i]
		if err := m.saveMsg(ctx, msg); err != nil {
			return err
		}
		env.fault(fmt.Sprintf("direct:reported:%d", i))
	}
	return ws.release(ctx, env)
}

// report says what became of the member's checkout since the request
// found it: for a write request its new commits, the files they change and
// what is left uncommitted; for a read request whether anything changed
// while it was read (a stale-read warning).
func (m *member) report(ctx context.Context) (*request.Report, error) {
	start := m.r.Start
	if start == nil {
		return nil, nil
	}
	rep := &request.Report{Branch: start.Branch, From: start.Commit, DirtyBefore: start.Dirty}
	head, err := m.repo.WorktreeBranch(m.t.Repo)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.t.Name, err)
	}
	if head != "refs/heads/"+start.Branch {
		rep.Note = fmt.Sprintf("the checkout was switched from %s to %q", start.Branch, strings.TrimPrefix(head, "refs/heads/"))
	}
	if rep.To, err = m.repo.ResolveRef(ctx, "refs/heads/"+start.Branch); err != nil {
		return nil, fmt.Errorf("%s: branch %s: %w", m.t.Name, start.Branch, err)
	}
	if rep.Dirty, err = m.repo.Dirty(ctx, m.t.Repo); err != nil {
		return nil, err
	}
	if !m.r.Request.Writes() {
		tree, err := m.repo.SnapshotTree(ctx, m.t.Repo)
		if err != nil {
			return nil, err
		}
		switch {
		case rep.Note != "":
			rep.Stale = "read while " + rep.Note
		case rep.To != rep.From:
			rep.Stale = fmt.Sprintf("read while %s moved from %.12s to %.12s", start.Branch, rep.From, rep.To)
		case tree != start.Tree:
			rep.Stale = "read while its files changed"
		}
		return rep, nil
	}
	if rep.To == rep.From {
		return rep, nil
	}
	if ok, err := m.repo.IsAncestor(ctx, rep.From, rep.To); err != nil {
		return nil, err
	} else if !ok {
		rep.Note = strings.TrimPrefix(rep.Note+"; ", "; ") + fmt.Sprintf("%.12s is not an ancestor of %.12s: history was rewritten", rep.From, rep.To)
	}
	if rep.Commits, err = m.repo.Subjects(ctx, rep.From, rep.To, request.MaxReportLines); err != nil {
		return nil, err
	}
	files, err := m.repo.ChangedPaths(ctx, rep.From, rep.To)
	if err != nil {
		return nil, err
	}
	rep.Files = files[:min(len(files), request.MaxReportLines)]
	return rep, nil
}

// afterRun settles a request whose worker's run ended while the request
// still says working (an observer stopped between the two): a delivered
// run goes on as a delivery does; any other ends the request as its
// observer would have.
func (ws *Workspace) afterRun(ctx context.Context, env *Env, r run.Run) (bool, error) {
	if r.State == run.StateDelivered {
		return ws.afterDelivery(ctx, env)
	}
	phase, reason := workerEnd(r)
	if _, err := ws.takeWorkerObjects(ctx); err != nil { // its ending was saved, its objects not yet taken in
		return false, err
	}
	if ws.direct() {
		return true, ws.finishDirect(ctx, env, phase, reason, phase+": "+reason)
	}
	return true, ws.saveAll(ctx, phase+": "+reason, func(m *member) { m.r.Phase, m.r.Reason = phase, reason })
}

// afterDelivery is what follows a worker's delivery: the task checks on
// its candidates (checked work), the next task or the end (direct work).
func (ws *Workspace) afterDelivery(ctx context.Context, env *Env) (bool, error) {
	if ws.direct() {
		return ws.nextTask(ctx, env)
	}
	return true, ws.checkCandidates(ctx, env)
}

// reconcileDirect settles what an interruption left of direct work, from
// its records (P7). While any member records a worker not ended, the
// request is its observer's (reconcile observed it once already) or, if
// aborted, abort's, which ends the worker; nothing is released. Otherwise:
// a finish interrupted between members is completed; an interrupted
// allocation started no worker, so what it reserved is released; a
// request that ended gets its reports and releases what it holds.
func (ws *Workspace) reconcileDirect(ctx context.Context, env *Env) error {
	phase, reason, allocating, working := "", "", false, false
	for _, m := range ws.members {
		if w := m.r.Worker; w != nil && !w.Ended {
			return nil
		}
		switch m.r.Phase {
		case request.PhaseWorking:
			working = true
		case request.PhaseAllocating:
			allocating = true
		default:
			phase, reason = m.r.Phase, m.r.Reason
		}
	}
	switch {
	case working && phase == "":
		return nil // a task delivered; its observer goes on
	case working:
		return ws.finishDirect(ctx, env, phase, reason, "reconciled: "+phase)
	case allocating || len(ws.members) < len(ws.members[0].r.Request.Repositories):
		return ws.release(ctx, env)
	}
	return ws.finishDirect(ctx, env, "", "", "reconciled: reported; its workers are stopped")
}

// cleanupDirect ends direct work that is over: its reports recorded, what
// it reserved released, its private input copies removed, every member
// marked cleaned. The checkouts are the user's: nothing in them is
// touched. A request whose workers are not proved stopped is refused.
func (ws *Workspace) cleanupDirect(ctx context.Context, env *Env) error {
	for _, m := range ws.members {
		switch w := m.r.Worker; {
		case m.r.Phase == request.PhaseWorking || m.r.Phase == request.PhaseAllocating:
			return &RefusedError{Member: m.t.Name, Reason: fmt.Sprintf("is %s; only ended direct work is cleaned (abort it first)", m.r.Phase)}
		case w != nil && !w.Ended:
			return &RefusedError{Member: m.t.Name, Reason: "its worker is not proved stopped; abort it first"}
		}
	}
	if err := ws.finishDirect(ctx, env, "", "", "reported; its workers are stopped"); err != nil {
		return err
	}
	dir := filepath.Join(Dir(ws.Root, ws.ID), "inputs")
	writable(dir)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return ws.saveAll(ctx, "cleaned: reservation released, input copies removed", func(m *member) {
		if m.r.Phase != request.PhaseCleaned {
			m.r.Reason = strings.TrimSuffix("ended "+m.r.Phase+": "+m.r.Reason, ": ")
			m.r.Phase = request.PhaseCleaned
		}
	})
}
