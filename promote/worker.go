package promote

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/agents/sandbox"
	"github.com/git-flume/git-flume/internal/git/ondisk"
	"github.com/git-flume/git-flume/internal/git/ownobjects"
	"github.com/git-flume/git-flume/internal/lockfile"
	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/promote/request"
	"github.com/git-flume/git-flume/refs"
)

//go:embed prompts/worker.md
var workerPromptText string

// workerPrompt is parsed when first used, not at every command's start.
var workerPrompt = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("worker").Parse(workerPromptText))
})

func (ws *Workspace) prompt() (string, error) {
	req := ws.members[0].r.Request
	type named struct{ Name, Path, Branch string }
	type check struct{ Repository, Line string }
	data := struct {
		ID, Root, Goal, Requirements, Deliverable string
		Repositories, Inputs                      []named
		Checks                                    []check
	}{ID: ws.ID, Root: ws.Root, Goal: req.Goal, Requirements: req.Tasks[0].Requirements, Deliverable: req.Tasks[0].Deliverable}
	for _, m := range ws.members {
		data.Repositories = append(data.Repositories, named{m.t.Name, m.r.WorkerTree.Path, m.r.WorkerTree.Branch})
	}
	inputs := ws.members[0].r.Inputs
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		data.Inputs = append(data.Inputs, named{Name: name, Path: inputs[name].Copy})
	}
	for _, c := range req.Tasks[0].Checks {
		data.Checks = append(data.Checks, check{c.Repository, c.Line()})
	}
	var b strings.Builder
	if err := workerPrompt().Execute(&b, data); err != nil {
		return "", err
	}
	return b.String() + "\n" + agent.StandingOrders + "\n", nil
}

// paneName is the worker's tmux session: one per request and root, and
// for direct work one per task (task, "" otherwise), so a new worker never
// starts under the name of one still being ended.
func paneName(ws *Workspace, task string) string {
	name := "flume-ws-" + ws.ID
	if task != "" {
		name += "-" + task
	}
	return strings.NewReplacer(".", "_", ":", "_").Replace(name)
}

// startWorker records the worker in every member, then starts it (P3): the
// record comes first, so a crash between the two shows a worker that never
// started, never an agent no record knows. Its prompt is never replayed.
// edit, if set, changes each member's record in the same write (direct
// work records the task the worker takes and the one before it).
func startWorker(ctx context.Context, env *Env, ws *Workspace, prog agent.Program, prompt, promptFile, pane string, edit func(*member)) error {
	if err := os.WriteFile(promptFile, []byte(prompt), 0o600); err != nil {
		return err
	}
	now := env.clock()
	sb, unsandboxed := workerSandbox(env, ws, prog)
	w := &request.Worker{
		Agent: run.Agent{Program: prog.Name, Format: prog.Format, Pattern: prog.Transcript, Session: agent.NewSessionID(),
			Pane: pane, PaneHost: env.Pane, Host: env.Host, PromptFile: promptFile, Started: now, SentAt: now, Sends: 1, Sandbox: sandbox.Note(sb, unsandboxed), Layers: sb.Held()},
		Home: agent.HomeOf(env.CallerEnv), Life: run.Life{State: run.StateStarting},
	}
	if env.Pane == "print" {
		w.Pane = "print"
	}
	if err := ws.saveAll(ctx, fmt.Sprintf("working: starting %s (session %s)", prog.Name, w.Session), func(m *member) {
		m.r.Phase, m.r.Worker = request.PhaseWorking, w
		if edit != nil {
			edit(m)
		}
	}); err != nil {
		return err
	}
	env.fault("start:recorded")
	vars := agent.Vars{Prompt: prompt, PromptFile: promptFile, SessionID: w.Session, Place: ws.Root, Home: w.Home}
	repos, inputs := ws.maps(workerTree)
	flume := []string{"FLUME_WORKSPACE=" + ws.ID, "FLUME_SESSION=" + w.Session, "FLUME_REPOSITORIES=" + repos, "FLUME_INPUTS=" + inputs}
	if first := ws.members[0].r; first.Request.Direct() {
		flume = append(flume, "FLUME_TASK="+first.Request.Tasks[first.Task].ID)
	}
	return agent.Begin(ctx, env.Panes, agent.Start{Program: prog, Vars: vars, Pane: w.Pane, Dir: ws.Root, Caller: env.CallerEnv,
		Flume: flume, Print: env.Print, Sandbox: sb, SandboxExe: env.Sandbox})
}

// workerSandbox is what a checked request's worker may write (A12), or nil
// and why (direct work commits in checkouts whose git folders hold config).
func workerSandbox(env *Env, ws *Workspace, prog agent.Program) (*sandbox.Sandbox, string) {
	switch {
	case env.Sandbox == "":
		return nil, "flume runs agents without a sandbox here (FLUME_SANDBOX=off)"
	case ws.direct():
		return nil, "direct work commits in the members' own checkouts"
	}
	var trees []sandbox.Tree
	for _, m := range ws.members {
		trees = append(trees, sandbox.Tree{CommonDir: m.repo.CommonDir, Path: m.r.WorkerTree.Path, Branch: "refs/heads/" + m.r.WorkerTree.Branch})
	}
	dirs, files, err := prog.StatePaths(agent.HomeOf(env.CallerEnv))
	if err == nil {
		var sb *sandbox.Sandbox
		if sb, err = sandbox.ForTrees(env.CallerEnv, trees, dirs, files); err == nil {
			return sb, ""
		}
	}
	return nil, err.Error()
}

// endWorker ends the worker and verifies it gone (X5); false with an
// error when that could not be proved.
func endWorker(ctx context.Context, env *Env, ws *Workspace) (bool, error) {
	w := ws.members[0].r.Worker
	if w == nil || w.Ended {
		return true, nil
	}
	a := w.Agent
	if err := run.End(ctx, env.panes(*w), &a); err != nil {
		return false, fmt.Errorf("end worker %s (session %s): %w", w.Pane, w.Session, err)
	}
	return true, nil
}

// Observe follows the worker until it settles (once, if once is set): its
// prompt confirmed in its own transcript (A3), resent once if it never
// showed; then, when its turn is done, the worker is ended and the task
// checks run on its candidates; a need, an error, an exit or a limit
// blocks or fails the request with the reason. It returns whether the
// worker settled. Only one observer runs per request.
func Observe(ctx context.Context, env *Env, root, id string, once bool) (bool, error) {
	l, err := lockfile.TryTake(filepath.Join(Dir(root, id), "observe"))
	if errors.Is(err, lockfile.ErrBusy) {
		return false, nil // another observer follows it
	}
	if err != nil {
		return false, err
	}
	defer l.Unlock()
	ws, err := load(ctx, env, root, id)
	if err != nil {
		return false, err
	}
	interval := env.Interval
	if interval <= 0 {
		interval = time.Second
	}
	failures := 0
	for {
		if ws.members[0].r.Phase != request.PhaseWorking {
			return true, nil
		}
		done, err := ws.observeOnce(ctx, env)
		var conflict *refs.ConflictError
		switch {
		case errors.As(err, &conflict):
			// Another command (abort) moved the records: read again.
		case done || once:
			return done, err
		case err != nil:
			// A step that failed (a git or tmux call under load) is tried
			// again at the next reading, as a place's watcher does: an
			// observer that left would leave its worker unobserved.
			if failures++; failures >= observeFailures {
				return false, fmt.Errorf("observing request %s: %d steps failed in a row, the last: %w", ws.ID, failures, err)
			}
		default:
			failures = 0
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(interval):
		}
		if err := ws.refresh(ctx); err != nil {
			return false, err
		}
	}
}

// observeFailures is how many failed steps in a row end an observer.
const observeFailures = 10

func (env *Env) window() time.Duration {
	if env.ConfirmWindow > 0 {
		return env.ConfirmWindow
	}
	return 60 * time.Second
}

// policy is how the worker's run is decided: its ended turn is its
// deliverable (its candidates are checked next); nobody answers it, so a
// need ends it; its limits are hard (the seed's childMaxMs, childIdleMs):
// past its maximum runtime or quiet past its idle limit it is cut, never
// steered or reported stuck. Everything else is decided as for a stage.
func (env *Env) policy(l request.Limits) run.Policy {
	p := run.Policy{Window: env.window(), TurnDelivers: true, NeedEnds: true, BudgetName: "maximum runtime",
		Stuck: time.Duration(math.MaxInt64)}
	if l.IdleMs > 0 {
		p.QuietEnds, p.Stuck = true, time.Duration(l.IdleMs)*time.Millisecond
	}
	return p
}

// panes is the pane host the worker runs in; nil for a printed one.
func (env *Env) panes(w request.Worker) agent.PaneHost {
	if w.Printed() {
		return nil
	}
	return env.Panes
}

// observeOnce is one step of the worker's run lifecycle (A10), the same
// one a stage's agent goes through: observe (its transcript, its pane, its
// worktrees), decide (run.Decide under the worker's policy) and apply. It
// reports whether the worker settled: delivered (then the task checks run
// on its candidates, P3) or ended otherwise, with the request's phase and
// reason said.
func (ws *Workspace) observeOnce(ctx context.Context, env *Env) (bool, error) {
	w := *ws.members[0].r.Worker
	limits := ws.members[0].r.Limits
	pol := env.policy(limits)
	cur := w.Run(limits)
	src := run.Sources{
		Panes: env.panes(w),
		Vars:  agent.Vars{SessionID: w.Session, Place: ws.Root, Home: w.Home},
		Now:   env.clock(),
		Place: ws.worktreeGone,
	}
	if !run.Active(cur.State) {
		return ws.afterRun(ctx, env, cur)
	}
	o, prompt, err := run.Observe(ctx, cur, src)
	if err != nil {
		return false, err
	}
	var settled run.Run
	for {
		next, mv := run.Decide(cur, o, pol)
		effects := run.Effects{Panes: env.panes(w), Fault: env.fault, Save: ws.saveRun(env, w, o, &settled)}
		moved, untyped, err := run.Apply(ctx, cur, next, mv, prompt, o, pol, effects)
		if untyped && !o.Busy {
			o.Busy = true
			continue
		}
		if err != nil || !moved {
			return false, err
		}
		switch {
		case settled.State == run.StateDelivered:
			return ws.afterDelivery(ctx, env)
		case !run.Active(settled.State) && ws.direct():
			return true, ws.finishDirect(ctx, env, "", "", "reported")
		case !run.Active(settled.State):
			return true, nil
		}
		return false, nil
	}
}

// worktreeGone says which of the worker's worktrees is gone, "" when
// none is.
func (ws *Workspace) worktreeGone() string {
	for _, m := range ws.members {
		if _, err := os.Stat(m.r.WorkerTree.Path); errors.Is(err, os.ErrNotExist) {
			return fmt.Sprintf("its worktree %s is gone", m.r.WorkerTree.Path)
		}
	}
	return ""
}

// saveRun is how a step of worker w's run is recorded in every member's
// record: a run that ended without delivering ends the worker, verified
// (X5), and says the request's phase; a direct request's delivery records
// its tasks, read from o. The run saved is left in settled.
func (ws *Workspace) saveRun(env *Env, w request.Worker, o run.Observation, settled *run.Run) func(ctx context.Context, r run.Run, msg string) (bool, error) {
	return func(ctx context.Context, r run.Run, msg string) (bool, error) {
		*settled = r
		phase, reason := request.PhaseWorking, ""
		if !run.Active(r.State) && r.State != run.StateDelivered {
			// The request leaves working: its worker goes with
			// it, verified (X5), whatever ended the run.
			if err := run.End(ctx, env.panes(w), r.Agent); err != nil {
				return false, fmt.Errorf("end worker %s (session %s): %w", w.Pane, w.Session, err)
			}
			phase, reason = workerEnd(r)
			if refused, err := ws.takeWorkerObjects(ctx); err != nil {
				return false, err
			} else if len(refused) > 0 {
				reason += "; objects it wrote that are not what their names say were refused (" + strings.Join(refused, "; ") + ")"
			}
			msg = phase + ": " + reason
		}
		var wrote []string
		if r.State == run.StateDelivered && ws.direct() {
			var err error
			if wrote, err = ws.textTaskWrote(ctx); err != nil {
				return false, err
			}
		}
		err := ws.saveAll(ctx, msg, func(m *member) {
			cp := m.r.Worker.WithRun(r)
			m.r.Worker, m.r.Phase, m.r.Reason = &cp, phase, reason
			if r.State == run.StateDelivered && m.r.Request.Direct() {
				m.r.Tasks = ws.taskResult(cp, o.LastAssistant, wrote)
			}
		})
		return err == nil, err
	}
}

// workerEnd is the request's phase and reason for a worker run that ended
// without delivering: blocked while someone can see why and act (a dialog,
// a need, an error), failed when the run cannot go on (it never started,
// exited, was cut by a limit).
func workerEnd(r run.Run) (phase, reason string) {
	switch {
	case r.State == run.StateBlocked && r.Block != run.BlockExited && r.Block != run.BlockPlace:
		return request.PhaseBlocked, "the worker is blocked: " + r.Reason
	case r.State == run.StateCut:
		return request.PhaseFailed, "the worker was cut: " + r.Reason
	}
	return request.PhaseFailed, "the worker did not deliver: " + r.Reason
}

// checkCandidates reads each worker worktree's candidate and runs the
// task checks on the complete set (P3). A worktree left dirty fails the
// request: the deliverable is clean committed candidates.
func (ws *Workspace) checkCandidates(ctx context.Context, env *Env) error {
	if refused, err := ws.takeWorkerObjects(ctx); err != nil {
		return err
	} else if len(refused) > 0 {
		reason := fmt.Sprintf("the worker wrote objects that are not what their names say (%s): refused", strings.Join(refused, "; "))
		return ws.saveAll(ctx, "failed: "+reason, func(m *member) { m.r.Phase, m.r.Reason = request.PhaseFailed, reason })
	}
	for _, m := range ws.members {
		id, dirty, err := m.identity(ctx, m.r.WorkerTree, true)
		if err != nil {
			return err
		}
		if len(dirty) > 0 {
			reason := fmt.Sprintf("the worker left %s with uncommitted changes (%s); clean committed candidates were asked for", m.r.WorkerTree.Path, dirty[0])
			return ws.saveAll(ctx, "failed: "+reason, func(m *member) { m.r.Phase, m.r.Reason = request.PhaseFailed, reason })
		}
		m.r.Candidate = &id
	}
	results, err := ws.runChecks(ctx, env, "task", ws.members[0].r.Request.Tasks[0].Checks, workerTree, candidate)
	if err != nil {
		return err
	}
	ok := len(results) == len(ws.members[0].r.Request.Tasks[0].Checks)
	for _, r := range results {
		ok = ok && r.OK()
	}
	phase, reason, msg := request.PhaseChecked, "", "checked: every task check passed"
	if !ok {
		phase, reason = request.PhaseFailed, failure("task", results)
		msg = "failed: " + reason
	}
	return ws.saveAll(ctx, msg, func(m *member) { m.r.Phase, m.r.Reason, m.r.Checks = phase, reason, results })
}

// takeWorkerObjects takes what the worker wrote in each member's own
// object folder into that member's shared store, each object hashed again
// (A13): before its candidates are read, or when its work is retained at
// an abort. What was refused is returned, each named with its member.
func (ws *Workspace) takeWorkerObjects(ctx context.Context) ([]string, error) {
	var refused []string
	for _, m := range ws.members {
		own := m.ownObjects(m.r.WorkerTree)
		if own == "" {
			continue
		}
		res, err := ownobjects.Import(ctx, m.repo, own)
		for _, r := range res.Refused {
			refused = append(refused, m.t.Name+": "+term.Clean(r))
		}
		if err != nil {
			return refused, fmt.Errorf("%s: the worker's own objects: %w", m.t.Name, err)
		}
	}
	return refused, nil
}

// ownObjects is the own object folder of the agent working in t, or "".
func (m *member) ownObjects(t *request.Tree) string {
	if t == nil {
		return ""
	}
	if admin := ondisk.WorktreeAdmin(m.repo.CommonDir, t.Path); admin != "" {
		return ondisk.OwnObjects(m.repo.CommonDir, admin)
	}
	return ""
}
