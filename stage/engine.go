package stage

import (
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/git-flume/git-flume/agent"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
)

// Stage states (S1).
const (
	StateStarting     = "starting"
	StateUnknown      = "unknown"
	StateWorking      = "working"
	StateWaiting      = "waiting"
	StateStuck        = "stuck"
	StateDelivered    = "delivered"
	StateNeverStarted = "never-started"
	StateCut          = "cut"
	StateBlocked      = "blocked"
	StateLanded       = "landed"
)

// LengthMessage is the one recovery prompt after a reply cut for length
// (A8).
const LengthMessage = "Your last reply was cut off for length. Continue from where it stopped, in shorter steps; commit what is done."

// reminder is the one message after a turn that ended with neither the
// stage's deliverable nor a need (A8).
func reminder(st *StageRecord) string {
	return "Your turn ended, but this stage's deliverable is not in git yet (" + describeDeliverable(st.Deliverable) +
		"). Finish it and commit, or end your turn with a line starting with NEEDS: saying what you need."
}

// writeGuardSettings writes a Claude Code settings file whose PreToolUse
// hook runs the guard before every tool use.
func writeGuardSettings(path, command string) error {
	data, err := json.MarshalIndent(map[string]any{"hooks": map[string]any{"PreToolUse": []any{
		map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": command}}},
	}}}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// report shows the stage's state in the pane host's own view of the
// agent's pane, where it has one (herdr's sidebar, O3). Best effort: the
// record, not the sidebar, is the truth.
func report(ctx context.Context, env *Env, p *Place, st *StageRecord) {
	if st.Agent == nil || st.Agent.Pane == "print" {
		return
	}
	r, ok := env.Engine.panes(st.Agent).(agent.Reporter)
	if !ok {
		return
	}
	state := "unknown"
	switch st.State {
	case StateStarting, StateUnknown, StateWorking:
		state = "working"
	case StateWaiting, StateStuck, StateBlocked, StateNeverStarted, StateCut:
		state = "blocked"
	case StateDelivered, StateLanded:
		state = "idle"
	}
	msg := fmt.Sprintf("%s: stage %s (%d/%d) %s", p.ID, st.Name, p.Current+1, len(p.Stages), st.State)
	if st.Need != "" {
		msg += ": needs " + st.Need
	} else if st.Reason != "" {
		msg += ": " + st.Reason
	}
	r.Report(ctx, st.Agent.Pane, state, msg)
}

// followUp types a follow-up (the budget message, the length recovery
// prompt, the reminder) into the agent's pane only once the screen shows
// its ready composer (X3). It reports whether it typed: nothing is typed
// into a pane that is gone or busy (the caller tries again at a later
// step), and a screen that is a dialog is returned as blocked, with its
// words, never typed into.
func followUp(ctx context.Context, env *Env, a *AgentRun, text string) (sent bool, blocked string, err error) {
	if a == nil || a.Ended || !env.Engine.up(ctx, a) {
		return false, "", nil
	}
	return agent.Tell(ctx, env.Engine.panes(a), a.Pane, a.Format, text)
}

// BudgetMessage is the one message a stage's agent gets at 75% of its
// budget (W1): land softly, never start anew.
const BudgetMessage = "You have used three quarters of this stage's time budget. Start no new unit of work: finish the one in hand, commit it, and close with your STAGE REPORT."

// Fault is a test seam: crash tests set it to kill the process at a named
// point of an engine step. It is nil in git-flume itself.
var Fault func(point string)

func fault(point string) {
	if Fault != nil {
		Fault(point)
	}
}

// EngineOptions tune how stages start and are watched.
type EngineOptions struct {
	// Pane is "tmux" (default), "print" (flume prints the command and
	// watches the transcript) or "none" (flume starts no agent).
	Pane string
	// Panes is the pane host of Pane, for agents that record none.
	Panes agent.PaneHost
	// Hosts makes the pane host an agent recorded ("tmux", "herdr"), so a
	// command run with another default still reaches it; nil uses Panes.
	Hosts func(name string) agent.PaneHost
	// Agent is the program used when a place names none.
	Agent string
	// ConfirmWindow is how long a sent prompt may take to show in the
	// transcript before it is checked and sent once more (A3).
	ConfirmWindow time.Duration
	// StuckAfter is how long a stage may be quiet before it is reported
	// stuck (A7).
	StuckAfter time.Duration
	// Print receives the command an operator runs with the print pane.
	Print io.Writer
	// NoStart records what happened but starts no agent: for a run from a
	// hook, which runs inside an agent's environment, not the launching
	// caller's (A1). A watcher or the next command starts the stage.
	NoStart bool
	// Budget, when set, is every stage's budget, unclamped: a test and
	// experiment knob ($FLUME_BUDGET). Configuration sets it otherwise (W1).
	Budget time.Duration
	// Guard is the command an agent's PreToolUse hook runs to ask flume
	// (A9), such as "/usr/local/bin/git-flume guard"; "" installs none.
	Guard string
	// ReportGrace is how long an agent whose deliverable is in git may
	// still take to close its turn with its STAGE REPORT (W2).
	ReportGrace time.Duration
	// RemindAfter is how long a turn that ended with neither deliverable
	// nor need stays quiet before the one reminder (A8).
	RemindAfter time.Duration
}

// panes is the pane host agent a runs in: the one it recorded, or the
// default one.
func (o EngineOptions) panes(a *AgentRun) agent.PaneHost {
	if a != nil && a.PaneHost != "" && o.Hosts != nil {
		return o.Hosts(a.PaneHost)
	}
	return o.Panes
}

// up reports whether agent a runs in its pane now; an agent the operator
// started (print) is never "up" for flume to type into.
func (o EngineOptions) up(ctx context.Context, a *AgentRun) bool {
	if a.Pane == "print" {
		return false
	}
	h := o.panes(a)
	return h != nil && h.Alive(ctx, a.Pane)
}

func (o EngineOptions) reportGrace() time.Duration {
	if o.ReportGrace > 0 {
		return o.ReportGrace
	}
	return 60 * time.Second
}

func (o EngineOptions) remindAfter() time.Duration {
	if o.RemindAfter > 0 {
		return o.RemindAfter
	}
	return 2 * time.Minute
}

func (o EngineOptions) window() time.Duration {
	if o.ConfirmWindow > 0 {
		return o.ConfirmWindow
	}
	return 60 * time.Second
}

func (o EngineOptions) stuckAfter() time.Duration {
	if o.StuckAfter > 0 {
		return o.StuckAfter
	}
	return 30 * time.Minute
}

// active reports a state whose agent is expected to be at work.
func active(state string) bool {
	switch state {
	case StateStarting, StateUnknown, StateWorking, StateWaiting, StateStuck:
		return true
	}
	return false
}

// Confirm advances a place whose stage just started until its prompt is
// confirmed or the stage resolves otherwise (working, blocked,
// never-started, …): at most a window and a half after the second send.
// Slow is not failed: a stage still starting then is left to the watcher.
func Confirm(ctx context.Context, env *Env, repoDir, id string) (*Place, error) {
	for {
		p, err := Advance(ctx, env, repoDir, id)
		if err != nil {
			return p, err
		}
		st := p.Stages[p.Current]
		if (st.State != StateStarting && st.State != StateUnknown) || st.Agent == nil || st.Agent.Pane == "print" {
			return p, nil
		}
		// Each send gets its window and a half: a resend restarts it.
		if time.Since(st.Agent.SentAt) > env.Engine.window()*3/2 && st.Agent.Sends >= 2 {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Advance runs the place's stage engine until nothing more moves: start a
// pending stage, confirm its prompt, notice its deliverable, its need, its
// silence. Every move is a CAS write of the place record made from what was
// just read, so any process may run it, and one killed midway loses nothing:
// the next run reads where it stopped.
func Advance(ctx context.Context, env *Env, repoDir, id string) (*Place, error) {
	repo, store, err := env.open(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	for n := range 16 {
		rec, p, err := readPlace(ctx, store, id)
		if err != nil {
			return nil, err
		}
		if n == 0 && p.Host == env.Host {
			if err := checkHome(ctx, env, repo, p); err != nil {
				return p, err
			}
			// W4: the live log gets the tool calls the transcripts show
			// (startStage catches up again before it replaces an agent).
			// The record, not the log, is the truth: a log that cannot
			// be written stops nothing.
			logTools(ctx, repo.CommonDir, p)
		}
		moved, err := step(ctx, env, repo, store, rec, p)
		var conflict *refs.ConflictError
		if errors.As(err, &conflict) {
			continue // someone else moved it: read again
		}
		if err != nil || !moved {
			return p, err
		}
	}
	_, p, err := readPlace(ctx, store, id)
	return p, err
}

// step makes at most one move and reports whether it did.
func step(ctx context.Context, env *Env, repo *git.Repo, store *refs.Store, rec *refs.Record, p *Place) (bool, error) {
	if p.Phase != PhaseMade || p.Host != env.Host || p.Current >= len(p.Stages) {
		return false, nil
	}
	st := &p.Stages[p.Current]
	write := func(msg string) (bool, error) {
		_, err := savePlace(ctx, store, rec, p, fmt.Sprintf("%s %s: %s", st.Name, p.ID, msg))
		if err == nil {
			report(ctx, env, p, st)
		}
		return err == nil, err
	}
	if st.State == StagePending {
		if env.Engine.Pane == "none" || env.Engine.NoStart {
			return false, nil
		}
		return startStage(ctx, env, repo, store, rec, p)
	}
	if !active(st.State) {
		return false, nil
	}
	now := time.Now().UTC() // timers run on the real clock, never FLUME_NOW

	// The transcript is the proof of everything after: find it, then read
	// it once for this step.
	a := st.Agent
	// tell types one of flume's own follow-ups (X3) and, only once typed,
	// marks it sent and records msg (X5). A dialog on screen blocks the
	// stage with its words. typed is false when nothing was typed and
	// nothing moved: the agent is busy or gone, and a later step tries.
	tell := func(text string, sent *bool, msg string) (typed, moved bool, err error) {
		ok, blocked, err := followUp(ctx, env, a, text)
		switch {
		case err != nil:
			return false, false, err
		case blocked != "":
			st.State, st.Reason = StateBlocked, "the screen is not the agent's ready composer: "+blocked
			moved, err = write("blocked: " + blocked)
			return true, moved, err
		case !ok:
			return false, false, nil
		}
		*sent = true
		moved, err = write(msg)
		return true, moved, err
	}
	var tr *agent.Transcript
	var prompt []byte
	if a != nil && !a.Ended {
		if a.Transcript == "" {
			vars := agent.Vars{SessionID: a.Session, Place: p.Path, Home: agent.HomeOf(env.CallerEnv)}
			if t := programOf(a).FindTranscript(vars, a.Started, takenTranscripts(p)); t != "" {
				a.Transcript = t
				return write("transcript " + t)
			}
		}
		var err error
		if prompt, err = os.ReadFile(a.PromptFile); err != nil {
			return false, fmt.Errorf("read the stage's prompt: %w", err)
		}
		if a.Transcript != "" {
			if tr, err = agent.ReadTranscriptFile(a.Transcript, a.Format); err != nil {
				return false, err
			}
		}
		// A3: the prompt's arrival is recorded before anything it led to,
		// so the history reads "confirmed" before "delivered".
		if (st.State == StateStarting || st.State == StateUnknown) && tr != nil && tr.Received(string(prompt)) {
			st.State, st.Reason = StateWorking, ""
			return write("prompt confirmed in the transcript")
		}
	}

	// K6: the deliverable is read at one commit, the branch head read once.
	head, err := repo.ResolveRef(ctx, p.branchRef())
	if err != nil && !errors.Is(err, git.ErrNotExist) {
		return false, err
	}
	done, what, tasks, err := deliverable(ctx, repo, p, st, head)
	if err != nil {
		return false, err
	}
	if done {
		// W2: an agent whose turn still runs gets a grace to close it with
		// its STAGE REPORT before it is ended.
		if a != nil && !a.Ended && tr != nil && tr.Turn == agent.TurnRunning && env.Engine.up(ctx, a) {
			if st.Landing == nil {
				st.Landing = &now
				return write("deliverable in git; the agent closes its turn")
			}
			if now.Sub(*st.Landing) < env.Engine.reportGrace() {
				return false, nil
			}
		}
		if tr != nil {
			st.Report = ParseReport(tr.LastAssistant)
		}
		st.ReportMissing = st.Report == nil
		// End the agent first: a stage is delivered only with its agent
		// gone, and the next one never starts over it (K1).
		if err := endAgent(ctx, env, st.Agent); err != nil {
			return false, err
		}
		fault("deliver:agent-ended")
		if err := keepSnapshot(ctx, repo, p, st, "end"); err != nil {
			return false, err
		}
		st.State, st.Delivered, st.At, st.Ended, st.Tasks, st.Need = StateDelivered, what, head, &now, tasks, ""
		if st.Deliverable == DeliverLanded {
			st.State = StateLanded
		}
		msg := "delivered: " + what
		if p.Current+1 < len(p.Stages) {
			p.Current++
			msg += "; next stage " + p.Stages[p.Current].Name
		}
		moved, err := write(msg)
		if moved {
			fault("deliver:recorded")
		}
		return moved, err
	}
	if tasks != nil && (st.Tasks == nil || *st.Tasks != *tasks) {
		st.Tasks = tasks
		return write(fmt.Sprintf("tasks %d/%d", tasks.Done, tasks.Total))
	}

	if a == nil || a.Ended {
		return false, nil
	}

	// W1: the stage's budget, on the real clock from its start. The
	// deliverable above wins over a budget used up at the same reading.
	if budget := time.Duration(st.BudgetMs) * time.Millisecond; budget > 0 && st.Started != nil {
		used := now.Sub(*st.Started)
		switch {
		case used >= budget:
			if err := endAgent(ctx, env, a); err != nil {
				return false, err
			}
			if err := keepSnapshot(ctx, repo, p, st, "cut"); err != nil {
				return false, err
			}
			if tr != nil {
				st.Report = ParseReport(tr.LastAssistant)
			}
			st.ReportMissing = st.Report == nil
			st.State, st.Reason, st.Ended = StateCut, fmt.Sprintf("its budget of %s was used up", budget), &now
			return write("cut: " + st.Reason)
		case used >= budget*3/4 && !st.Told && st.State != StateStarting && st.State != StateUnknown:
			if typed, moved, err := tell(BudgetMessage, &st.Told, "three quarters of the budget used: told the agent to finish"); typed || err != nil {
				return moved, err
			}
		}
	}

	switch st.State {
	case StateStarting, StateUnknown:
		if now.Sub(a.SentAt) < env.Engine.window() {
			// Slow is not failed, but a dialog is known at once (X3).
			if env.Engine.up(ctx, a) {
				if text, err := env.Engine.panes(a).Capture(ctx, a.Pane); err == nil {
					if screen := agent.ReadScreen(a.Format, text); screen.Dialog {
						st.State, st.Reason = StateBlocked, "the screen is not the agent's ready composer: "+screen.Words
						return write("blocked: " + screen.Words)
					}
				}
			}
			return false, nil
		}
		if a.Pane == "print" {
			// The operator starts it: flume only watches (A3).
			if tr == nil && st.State != StateUnknown {
				st.State = StateUnknown
				return write("no transcript yet")
			}
			return false, nil
		}
		return confirmOrResend(ctx, env, st, a, string(prompt), tr, write)
	case StateWorking, StateStuck, StateWaiting:
		if tr == nil {
			return false, nil
		}
		if need := tr.Need(); need != "" {
			if st.State != StateWaiting || st.Need != need {
				st.State, st.Need = StateWaiting, need
				return write("waiting: " + need)
			}
			return false, nil
		}
		if st.State == StateWaiting {
			// The newest message no longer stops short: answered.
			st.State, st.Need = StateWorking, ""
			return write("need answered")
		}
		quiet := now.Sub(modTime(a.Transcript))
		// A8: checkpoint recovery, one follow-up of each kind at most.
		switch tr.Turn {
		case agent.TurnError:
			st.State, st.Reason = StateBlocked, "the agent's turn ended with an error: "+tr.ErrorText
			return write("blocked: " + st.Reason)
		case agent.TurnLength:
			if st.LengthPrompted {
				if tr.Received(LengthMessage) {
					st.State, st.Reason = StateBlocked, "its reply was cut for length again after the recovery prompt"
					return write("blocked: " + st.Reason)
				}
				break
			}
			_, moved, err := tell(LengthMessage, &st.LengthPrompted, "reply cut for length: sent the one recovery prompt")
			return moved, err
		case agent.TurnDone:
			if !st.Reminded && quiet >= env.Engine.remindAfter() {
				_, moved, err := tell(reminder(st), &st.Reminded, "turn ended with neither the deliverable nor NEEDS:; sent the one reminder")
				return moved, err
			}
		}
		if st.State == StateWorking && quiet > env.Engine.stuckAfter() {
			st.State = StateStuck
			return write(fmt.Sprintf("stuck: quiet for %s with no deliverable and no need", quiet.Round(time.Second)))
		}
		if st.State == StateStuck && quiet <= env.Engine.stuckAfter() {
			st.State = StateWorking
			return write("active again")
		}
	}
	return false, nil
}

// confirmOrResend handles a prompt the transcript has not shown within the
// window (A3, X3): a screen that is not the program's ready composer is
// never typed into and blocks the stage with its words; otherwise the prompt
// is sent once more, unless the composer already holds it; a second miss is
// never-started.
func confirmOrResend(ctx context.Context, env *Env, st *StageRecord, a *AgentRun, prompt string, tr *agent.Transcript, write func(string) (bool, error)) (bool, error) {
	r, err := agent.ResendPrompt(ctx, env.Engine.panes(a), a.Pane, a.Format, prompt, a.Sends)
	switch {
	case err != nil:
		return false, err
	case r.Exited:
		st.State, st.Reason = StateNeverStarted, "the agent exited before its prompt showed in its transcript"
		a.Ended = true
		return write("never started: agent exited")
	case r.Busy:
		return false, nil // slow is not failed
	case r.Blocked != "":
		st.State, st.Reason = StateBlocked, "the screen is not the agent's ready composer: "+r.Blocked
		return write("blocked: " + r.Blocked)
	case r.GaveUp:
		st.State, st.Reason = StateNeverStarted, fmt.Sprintf("the prompt was sent %d times and never showed in the transcript", a.Sends)
		return write("never started")
	}
	if tr == nil && st.State == StateStarting {
		// The program has not written its transcript yet: watch it.
		st.State = StateUnknown
	}
	fault("resend:sent")
	a.Sends++
	a.SentAt = time.Now().UTC()
	return write(fmt.Sprintf("prompt not confirmed within %s; sent again", env.Engine.window()))
}

// startStage starts the current stage's agent, after checking no agent of
// the place still runs (K1). The record is written before the agent
// starts, so a crash between the two is seen as a stage whose agent never
// started, never as an agent no record knows.
func startStage(ctx context.Context, env *Env, repo *git.Repo, store *refs.Store, rec *refs.Record, p *Place) (bool, error) {
	st := &p.Stages[p.Current]
	for i := range p.Stages {
		if a := p.Stages[i].Agent; a != nil && !a.Ended && env.Engine.up(ctx, a) {
			return false, nil // K1: never start an agent over one still running
		}
	}
	cfg, err := LoadConfig(ctx, env.Runner, repo, p.Base, env.UserConfig)
	if err != nil {
		return false, err
	}
	now := time.Now().UTC()
	write := func(msg string) (bool, error) {
		_, err := savePlace(ctx, store, rec, p, fmt.Sprintf("%s %s: %s", st.Name, p.ID, msg))
		return err == nil, err
	}
	if r := p.Ready; r != nil && !r.OK && r.Running == nil && p.PlaceKind != "fix" {
		st.State, st.Reason = StateBlocked, fmt.Sprintf("the place is not ready: step %q exited %d", r.Step, r.Exit)
		return write("blocked: place not ready")
	}
	name := p.Agent
	if name == "" {
		name = env.Engine.Agent
	}
	if name == "" {
		name = "claude"
	}
	prog, err := agent.ResolveProgram(name, cfg.Agents)
	if err != nil {
		return false, err
	}
	head, err := repo.ResolveRef(ctx, p.branchRef())
	if err != nil {
		return false, fmt.Errorf("branch %s: %w", p.Branch, err)
	}
	prompt, err := renderPrompt(ctx, repo, p.Base, p, st, cfg)
	if err != nil {
		return false, err
	}
	var role *Role
	if name := cfg.Stages[st.Name].Role; name != "" {
		if role, err = LoadRole(ctx, repo, p.Base, name); err != nil {
			return false, err
		}
	}
	run := st.Runs + 1
	logDir := LogDir(repo.CommonDir, p.ID)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return false, err
	}
	promptFile := filepath.Join(logDir, fmt.Sprintf("%d-%s-%d.prompt", p.Current+1, st.Name, run))
	if err := os.WriteFile(promptFile, []byte(prompt), 0o644); err != nil {
		return false, err
	}
	// W4: what the agent being replaced did stays in the live log.
	logTools(ctx, repo.CommonDir, p)
	a := &AgentRun{
		Program: prog.Name, Format: prog.Format, Pattern: prog.Transcript, Session: agent.NewSessionID(), Host: env.Host,
		Pane: paneName(p, run), PromptFile: promptFile, Started: now, SentAt: now, Sends: 1,
	}
	// The place's agents all run where its launch put them (A2).
	switch host := cmp.Or(p.Pane, env.Engine.Pane, "tmux"); host {
	case "print":
		a.Pane = "print"
	default:
		a.PaneHost = host
	}
	st.State, st.Base, st.Started, st.Ended, st.Runs, st.Agent = StateStarting, head, &now, nil, run, a
	st.Need, st.Reason, st.Delivered, st.At = "", "", "", ""
	st.BudgetMs, st.Told = cfg.StageBudget(st.Name).Milliseconds(), false
	st.Role = cfg.Stages[st.Name].Role
	if env.Engine.Budget > 0 {
		st.BudgetMs = env.Engine.Budget.Milliseconds()
	}
	// W3: a work tree dirty as the stage starts is kept, so rollback can
	// bring back exactly this.
	if st.Start, err = takeSnapshot(ctx, repo, p, st, "start"); err != nil {
		return false, err
	}
	if ok, err := write(fmt.Sprintf("starting %s (session %s)", prog.Name, a.Session)); !ok {
		return false, err
	}
	fault("start:recorded")
	// L2: readying runs again whenever a stage starts.
	if len(cfg.Ready) > 0 && p.Current > 0 {
		log, err := openLog(repo.CommonDir, p.ID)
		if err == nil {
			runSteps(cfg.Ready, p.Path, StepEnv(env.CallerEnv, p), "ready", env.Out, log)
			log.Close()
		}
	}
	vars := agent.Vars{Prompt: prompt, PromptFile: promptFile, SessionID: a.Session, Place: p.Path, Home: agent.HomeOf(env.CallerEnv)}
	if env.Engine.Guard != "" {
		// A9: the guard hook, in a settings file of this run (outside the
		// place, so it never makes the work tree dirty).
		settings := strings.TrimSuffix(promptFile, ".prompt") + ".settings.json"
		if err := writeGuardSettings(settings, env.Engine.Guard+" --place "+p.ID); err != nil {
			return true, err
		}
		vars.Settings = settings
	}
	if role != nil {
		vars.AllowedTools = role.Tools
	}
	if err := prog.PrepareTranscript(vars); err != nil {
		return true, err
	}
	argv := prog.Argv(vars)
	agentEnv := AgentEnv(env.CallerEnv, p, st.Name, a.Session)
	if a.Pane == "print" {
		fmt.Fprintf(env.Engine.Print, "cd %s && %s\n", agent.ShellQuote(p.Path), agent.ShellLine(argv))
		return true, nil
	}
	if _, err := env.Engine.panes(a).Start(ctx, a.Pane, p.Path, agentEnv, argv); err != nil {
		return true, fmt.Errorf("start %s in its pane: %w", prog.Name, err)
	}
	report(ctx, env, p, st)
	fault("start:started")
	return true, nil
}

// AgentEnv is a stage agent's environment (A1): the caller's, cleaned by
// agent.CallerEnv, plus FLUME_PLACE, FLUME_STAGE and FLUME_SESSION.
func AgentEnv(caller []string, p *Place, stage, session string) []string {
	return append(agent.CallerEnv(caller), "FLUME_PLACE="+p.ID, "FLUME_STAGE="+stage, "FLUME_SESSION="+session)
}

// endAgent ends a stage's agent and verifies it exited (X5).
func endAgent(ctx context.Context, env *Env, a *AgentRun) error {
	if a == nil || a.Ended {
		return nil
	}
	if a.Pane != "print" {
		if err := env.Engine.panes(a).Kill(ctx, a.Pane); err != nil {
			return err
		}
		// What the agent left running outside its pane (a daemon that
		// left its process group) carries its session in its environment.
		if err := agent.KillSession(a.Session); err != nil {
			return err
		}
	}
	a.Ended = true
	return nil
}

// deliverable checks the stage's deliverable at head (K6) and, for a
// change, counts its tasks.
func deliverable(ctx context.Context, repo *git.Repo, p *Place, st *StageRecord, head string) (bool, string, *TaskCount, error) {
	if head == "" {
		return false, "", nil, nil
	}
	switch d := st.Deliverable; {
	case d == DeliverCommit:
		if st.Base != "" && head != st.Base {
			return true, "commit " + head, nil, nil
		}
	case d == DeliverTasks:
		path := "openspec/changes/" + p.Name + "/tasks.md"
		data, err := repo.ReadFile(ctx, head, path)
		if errors.Is(err, git.ErrNotExist) {
			return false, "", nil, nil
		}
		if err != nil {
			return false, "", nil, err
		}
		tc := CountTasks(data)
		if tc.Total > 0 && tc.Done == tc.Total {
			return true, fmt.Sprintf("all %d tasks ticked at %s", tc.Total, head), &tc, nil
		}
		return false, "", &tc, nil
	case d == DeliverLanded:
		j, err := judge(ctx, repo, p)
		if err != nil {
			return false, "", nil, err
		}
		if j.landed {
			return true, fmt.Sprintf("%s landed on %s", p.Branch, p.Target), nil, nil
		}
	case strings.HasPrefix(d, deliverFile):
		path := strings.TrimPrefix(d, deliverFile)
		if _, err := repo.ReadFile(ctx, head, path); err == nil {
			return true, path + " committed at " + head, nil, nil
		}
		if p.PlaceKind == "question" || st.Name == "round" {
			// K4: a question's conclusion need not be committed.
			if _, err := os.Stat(filepath.Join(p.Path, path)); err == nil {
				return true, path + " written in the place", nil, nil
			}
		}
	}
	return false, "", nil, nil
}

var taskLine = regexp.MustCompile(`^\s*(?:[-*+]|\d+\.)\s*\[([^\]]*)\]`)

// CountTasks counts the tasks of a tasks.md as the openspec CLI does (K6):
// a bullet ("-", "*", "+" or "1."), then a box of at most one character:
// "[x]" or "[X]" (spaces aside) is done, "[ ]", "[~]", "[-]" and the like
// are open; "[xx]" is not a task.
func CountTasks(data []byte) TaskCount {
	var tc TaskCount
	for line := range strings.SplitSeq(string(data), "\n") {
		m := taskLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		box := strings.TrimSpace(m[1])
		if len(box) > 1 {
			continue
		}
		tc.Total++
		if box == "x" || box == "X" {
			tc.Done++
		}
	}
	return tc
}

// takenTranscripts are the transcripts the place's agents already claimed.
func takenTranscripts(p *Place) map[string]bool {
	taken := map[string]bool{}
	for _, st := range p.Stages {
		if st.Agent != nil && st.Agent.Transcript != "" {
			taken[st.Agent.Transcript] = true
		}
	}
	return taken
}

// programOf is what the engine needs of a started agent's program: where
// its transcript is and how to read it, as recorded when it started.
func programOf(a *AgentRun) agent.Program {
	return agent.Program{Name: a.Program, Format: a.Format, Transcript: a.Pattern}
}

func modTime(path string) time.Time {
	info, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return info.ModTime()
}

// paneName names a stage run's tmux session: unique per repository, place,
// stage and run, with no '.' or ':' (tmux target syntax).
func paneName(p *Place, run int) string {
	sum := sha1.Sum([]byte(p.Repo))
	id := strings.NewReplacer(".", "_", ":", "_").Replace(p.ID)
	return fmt.Sprintf("flume-%x-%s-%d-%d", sum[:3], id, p.Current+1, run)
}
