package promote

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/git-flume/git-flume/agent"
	"github.com/git-flume/git-flume/internal/lockfile"
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
	for _, name := range sortedKeys(inputs) {
		data.Inputs = append(data.Inputs, named{Name: name, Path: inputs[name].Copy})
	}
	for _, c := range req.Tasks[0].Checks {
		data.Checks = append(data.Checks, check{c.Repository, commandLine(c)})
	}
	var b strings.Builder
	if err := workerPrompt().Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// paneName is the worker's tmux session: one per request and root.
func paneName(ws *Workspace) string {
	return "flume-ws-" + strings.NewReplacer(".", "_", ":", "_").Replace(ws.ID)
}

// startWorker records the worker in every member, then starts it (P3): the
// record comes first, so a crash between the two shows a worker that never
// started, never an agent no record knows. Its prompt is never replayed.
func startWorker(ctx context.Context, env *Env, ws *Workspace, prog agent.Program) error {
	prompt, err := ws.prompt()
	if err != nil {
		return err
	}
	promptFile := filepath.Join(Dir(ws.Root, ws.ID), "worker.prompt")
	if err := os.WriteFile(promptFile, []byte(prompt), 0o600); err != nil {
		return err
	}
	now := env.clock()
	w := &Worker{
		Program: prog.Name, Format: prog.Format, Pattern: prog.Transcript, Session: agent.NewSessionID(),
		Pane: paneName(ws), Home: agent.HomeOf(env.CallerEnv), PromptFile: promptFile, Started: now, SentAt: now, Sends: 1,
	}
	if env.Pane == "print" {
		w.Pane = "print"
	}
	if err := ws.saveAll(ctx, fmt.Sprintf("working: starting %s (session %s)", prog.Name, w.Session), func(m *member) {
		m.r.Phase, m.r.Worker = PhaseWorking, w
	}); err != nil {
		return err
	}
	env.fault("start:recorded")
	vars := agent.Vars{Prompt: prompt, PromptFile: promptFile, SessionID: w.Session, Place: ws.Root, Home: w.Home}
	repos, inputs := ws.maps(workerTree)
	return agent.Begin(ctx, env.Panes, agent.Start{Program: prog, Vars: vars, Pane: w.Pane, Dir: ws.Root, Caller: env.CallerEnv,
		Flume: []string{"FLUME_WORKSPACE=" + ws.ID, "FLUME_SESSION=" + w.Session, "FLUME_REPOSITORIES=" + repos, "FLUME_INPUTS=" + inputs},
		Print: env.Print})
}

// endWorker ends the worker and verifies it gone (X5); false with an
// error when that could not be proved.
func endWorker(ctx context.Context, env *Env, ws *Workspace) (bool, error) {
	w := ws.members[0].r.Worker
	if w == nil || w.Ended {
		return true, nil
	}
	if err := agent.End(ctx, env.Panes, w.Pane, w.Session); err != nil {
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
	for {
		if ws.members[0].r.Phase != PhaseWorking {
			return true, nil
		}
		done, err := ws.observeOnce(ctx, env)
		var conflict *refs.ConflictError
		switch {
		case errors.As(err, &conflict):
			// Another command (abort) moved the records: read again.
		case done || err != nil || once:
			return done, err
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

func (env *Env) window() time.Duration {
	if env.ConfirmWindow > 0 {
		return env.ConfirmWindow
	}
	return 60 * time.Second
}

func (ws *Workspace) observeOnce(ctx context.Context, env *Env) (bool, error) {
	w := *ws.members[0].r.Worker
	prog := agent.Program{Name: w.Program, Format: w.Format, Transcript: w.Pattern}
	prompt, err := os.ReadFile(w.PromptFile)
	if err != nil {
		return false, err
	}
	vars := agent.Vars{SessionID: w.Session, Place: ws.Root, Home: w.Home}
	path := w.Transcript
	if path == "" {
		path = prog.FindTranscript(vars, w.Started, nil)
	}
	var tr *agent.Transcript
	if path != "" {
		if tr, err = agent.ReadTranscriptFile(path, w.Format); err != nil {
			return false, err
		}
	}
	alive := w.Pane == "print" || env.Panes.Alive(ctx, w.Pane)
	save := func(msg string, edit func(w *Worker)) error {
		return ws.saveAll(ctx, msg, func(m *member) {
			cp := *m.r.Worker
			cp.Transcript = path
			edit(&cp)
			m.r.Worker = &cp
		})
	}
	stop := func(phase, reason string) (bool, error) {
		ended, endErr := endWorker(ctx, env, ws)
		err := ws.saveAll(ctx, phase+": "+reason, func(m *member) {
			cp := *m.r.Worker
			cp.Transcript, cp.Ended = path, ended
			if tr != nil {
				cp.Need = tr.Need()
			}
			m.r.Worker, m.r.Phase, m.r.Reason = &cp, phase, reason
		})
		return true, errors.Join(endErr, err)
	}
	if !w.Confirmed {
		if tr != nil && tr.Received(string(prompt)) {
			return false, save("worker confirmed: its prompt is in its transcript", func(w *Worker) { w.Confirmed = true })
		}
		if env.clock().Sub(w.SentAt) < env.window() || w.Pane == "print" {
			// A printed command runs when its operator runs it; the
			// limits below still hold.
			return false, ws.limits(env.clock(), w, path, stop)
		}
		r, err := agent.ResendPrompt(ctx, env.Panes, w.Pane, w.Format, string(prompt), w.Sends)
		switch {
		case err != nil:
			return false, err
		case r.Exited:
			return stop(PhaseFailed, "the worker exited before its prompt showed in its transcript")
		case r.Busy:
			return false, nil // slow is not failed
		case r.Blocked != "":
			return stop(PhaseBlocked, "the worker's screen is not its ready composer: "+r.Blocked)
		case r.GaveUp:
			return stop(PhaseFailed, fmt.Sprintf("the prompt was sent %d times and never showed in the worker's transcript", w.Sends))
		}
		return false, save("prompt not confirmed in time; sent again", func(w *Worker) { w.Sends++; w.SentAt = env.clock() })
	}
	if w.Pane == "print" && w.Transcript == "" && path != "" {
		return false, save("worker transcript found", func(*Worker) {})
	}
	switch {
	case tr != nil && tr.Turn == agent.TurnDone:
		if need := tr.Need(); need != "" {
			return stop(PhaseBlocked, "the worker needs: "+need)
		}
		if _, err := stop(PhaseWorking, "the worker finished its turn; ended"); err != nil {
			return true, err
		}
		return true, ws.checkCandidates(ctx, env)
	case tr != nil && tr.Turn == agent.TurnError:
		return stop(PhaseBlocked, "the worker's turn ended with an error: "+tr.ErrorText)
	case tr != nil && tr.Turn == agent.TurnLength:
		return stop(PhaseBlocked, "the worker's reply was cut for length")
	case !alive:
		return stop(PhaseFailed, "the worker exited without finishing its turn")
	}
	return false, ws.limits(env.clock(), w, path, stop)
}

// limits fails the request when the worker ran past its maximum runtime or
// its transcript stayed quiet past the idle limit.
func (ws *Workspace) limits(now time.Time, w Worker, path string, stop func(phase, reason string) (bool, error)) error {
	max := time.Duration(ws.members[0].r.Limits.MaxMs) * time.Millisecond
	if max > 0 && now.Sub(w.Started) > max {
		_, err := stop(PhaseFailed, fmt.Sprintf("the worker ran past its maximum runtime of %s", max))
		return err
	}
	idle := time.Duration(ws.members[0].r.Limits.IdleMs) * time.Millisecond
	last := w.SentAt
	if info, err := os.Stat(path); err == nil && info.ModTime().After(last) {
		last = info.ModTime()
	}
	if idle > 0 && now.Sub(last) > idle {
		_, err := stop(PhaseFailed, fmt.Sprintf("the worker's transcript was idle past its limit of %s", idle))
		return err
	}
	return nil
}

// checkCandidates reads each worker worktree's candidate and runs the
// task checks on the complete set (P3). A worktree left dirty fails the
// request: the deliverable is clean committed candidates.
func (ws *Workspace) checkCandidates(ctx context.Context, env *Env) error {
	for _, m := range ws.members {
		id, dirty, err := m.identity(ctx, m.r.WorkerTree, true)
		if err != nil {
			return err
		}
		if len(dirty) > 0 {
			reason := fmt.Sprintf("the worker left %s with uncommitted changes (%s); clean committed candidates were asked for", m.r.WorkerTree.Path, dirty[0])
			return ws.saveAll(ctx, "failed: "+reason, func(m *member) { m.r.Phase, m.r.Reason = PhaseFailed, reason })
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
	phase, reason, msg := PhaseChecked, "", "checked: every task check passed"
	if !ok {
		phase, reason = PhaseFailed, failure("task", results)
		msg = "failed: " + reason
	}
	return ws.saveAll(ctx, msg, func(m *member) { m.r.Phase, m.r.Reason, m.r.Checks = phase, reason, results })
}
