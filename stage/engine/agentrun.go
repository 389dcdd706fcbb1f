// An agent run of a stage: starting it (K1, A1, A2), confirming its
// prompt or sending it once more (A3), follow-ups typed only into its ready
// composer (X3), and ending it (X5). The engine's step decides when.

package engine

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/runenv"
	"github.com/git-flume/git-flume/stage/toollog"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/broker"
	"github.com/git-flume/git-flume/agents/codexhook"
	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/agents/sandbox"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
)

// writeRunSettings writes the Claude Code settings file of one run: its
// PreToolUse hook runs the guard before every tool use (A9), and a hook
// for each of agentrun.HookEvents records the event in the run's events file
// (A11), so a wait for a person is known from the program itself.
func writeRunSettings(path, guard, events string) error {
	hook := func(command string) []any {
		return []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": command}}}}
	}
	hooks := map[string]any{"PreToolUse": hook(guard)}
	if flume, _, ok := strings.Cut(guard, " "); ok && events != "" {
		for _, e := range agentrun.HookEvents {
			hooks[e] = hook(flume + " agent-event --log " + agent.ShellQuote(events))
		}
	}
	data, err := json.MarshalIndent(map[string]any{"hooks": hooks}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// guardExtension is a pi extension that asks flume's guard before every
// tool call (A9), as Claude Code's PreToolUse hook does: it hands the
// guard the same payload, with pi's tool names as Claude Code's, on its
// standard input (never on a command line), and blocks the call with the
// guard's words unless the guard allows it. A guard that cannot run
// blocks too.
const guardExtension = `import { spawnSync } from "node:child_process";

const guard = %s;
const names = { bash: "Bash", read: "Read", write: "Write", edit: "Edit", grep: "Grep", find: "Glob", ls: "LS" };

export default function (pi) {
	pi.on("tool_call", async (event, ctx) => {
		const input = JSON.stringify({
			tool_name: names[event.toolName] ?? event.toolName,
			tool_input: event.input ?? {},
			cwd: ctx.cwd,
			hook_event_name: "PreToolUse",
		});
		const r = spawnSync(guard[0], guard.slice(1), { input, encoding: "utf8" });
		if (r.error) return { block: true, reason: "git flume guard could not run: " + r.error.message };
		if (r.status !== 0) return { block: true, reason: (r.stderr || "").trim() || "git flume guard exited " + r.status };
	});
}
`

// writeGuardExtension writes the pi guard extension for a run whose guard
// command is argv.
func writeGuardExtension(path string, argv []string) error {
	data, err := json.Marshal(argv)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(fmt.Sprintf(guardExtension, data)), 0o644)
}

// trustCodexHook has Codex trust the guard hook override before a run
// that needs it; a Codex not on PATH is left to the launch's own check.
func trustCodexHook(ctx context.Context, env *stage.Env, dir, override string) error {
	path, err := proc.LookPath("codex", env.CallerEnv)
	if err != nil {
		return nil
	}
	if err := codexhook.Trust(ctx, path, override, dir, env.CallerEnv); err != nil {
		return fmt.Errorf("codex would not run flume's guard: %w", err)
	}
	return nil
}

// startStage starts the current stage's agent, after checking no agent of
// the place still runs (K1). The record is written before the agent
// starts, so a crash between the two is seen as a stage whose agent never
// started, never as an agent no record knows.
func startStage(ctx context.Context, r *stage.Repository, rec *refs.Record, p *record.Place) (bool, error) {
	env, repo, store := r.Env, r.Git, r.Store
	if agentRunning(ctx, env, p) {
		return false, nil // K1: never start an agent over one still running
	}
	// A10: an agent starts only in the place's own worktree, verified
	// first (readying runs there too); the launcher refuses any other.
	if gone := placeGone(ctx, repo, p); gone != "" {
		st := &p.Stages[p.Current]
		st.Blocked(agentrun.BlockPlace, gone)
		_, err := record.SavePlace(ctx, store, rec, p, fmt.Sprintf("%s %s: blocked: %s", st.Name, p.ID, gone))
		return err == nil, err
	}
	rec, cfg, err := readyToStart(ctx, r, rec, p)
	if err != nil {
		return false, err
	}
	st := &p.Stages[p.Current] // after readying, which may read the record again into p
	write := func(msg string) (bool, error) {
		_, err := record.SavePlace(ctx, store, rec, p, fmt.Sprintf("%s %s: %s", st.Name, p.ID, msg))
		return err == nil, err
	}
	if r := p.Ready; r != nil && !r.OK && r.Running == nil && p.PlaceKind != "fix" {
		st.Blocked(agentrun.BlockReady, fmt.Sprintf("the place is not ready: step %q exited %d", r.Step, r.Exit))
		return write("blocked: place not ready")
	}
	head, err := repo.ResolveRef(ctx, p.BranchRef())
	if err != nil {
		return false, fmt.Errorf("branch %s: %w", p.Branch, err)
	}
	run, err := prepareRun(ctx, env, repo, p, st, cfg)
	if err != nil {
		return false, err
	}
	if blocked, err := holdRun(ctx, env, repo, cfg, p, st, run); err != nil {
		return false, err
	} else if blocked != "" {
		return write(blocked)
	}
	a := run.agent
	startRun(env, cfg, p, st, a, head)
	// W3: a work tree dirty as the stage starts is kept, for rollback.
	if st.Start, err = TakeSnapshot(ctx, repo, p, st, "start"); err != nil {
		return false, err
	}
	if ok, err := write(fmt.Sprintf("starting %s (session %s)", a.Program, a.Session)); !ok {
		return false, err
	}
	env.FaultAt("start:recorded")
	if err := beginRun(ctx, env, repo.CommonDir, p, st, run); err != nil {
		return true, err
	}
	if a.Pane != "print" { // the operator starts it
		report(ctx, env, p, st)
		env.FaultAt("start:started")
	}
	return true, nil
}

// readyToStart reads the configuration at the place's base and makes the
// place ready again (prepareAgain); it returns the record as it then
// stands.
func readyToStart(ctx context.Context, r *stage.Repository, rec *refs.Record, p *record.Place) (*refs.Record, *stage.Config, error) {
	cfg, err := r.Config(ctx, p.ConfigRev())
	if err != nil {
		return rec, nil, err
	}
	rec, err = prepareAgain(ctx, r.Env, r.Git, r.Store, rec, p, cfg)
	return rec, cfg, err
}

// prepareAgain makes the place ready again as a stage starts: a place
// that lacks what [run] promised it (a setup cut or failed, a worktree
// made again by hand) gets it first, then readying runs again
// (readyAgain). It returns the record as it then stands.
func prepareAgain(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, rec *refs.Record, p *record.Place, cfg *stage.Config) (*refs.Record, error) {
	rec, err := runenv.Finish(ctx, env, repo, store, rec, p, cfg.Run)
	if err != nil {
		return nil, err
	}
	return readyAgain(ctx, env, repo, store, rec, p, cfg)
}

// readyAgain runs readying again as a stage starts that is not the
// launch's first (L2: a question's every round, a retried first stage),
// before its start is recorded; the result is recorded and shown like the
// launch's, and holds back any kind but a fix (startStage). A step that
// failed is no error here. It returns the record as it then stands.
func readyAgain(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, rec *refs.Record, p *record.Place, cfg *stage.Config) (*refs.Record, error) {
	if len(cfg.Ready) == 0 || p.Current == 0 && p.Stages[p.Current].Runs == 0 {
		return rec, nil
	}
	var failure *stage.StepFailure
	rec, err := stage.Ready(ctx, env, repo, store, rec, p, cfg)
	if err != nil && !errors.As(err, &failure) {
		return nil, err
	}
	return rec, nil
}

// agentRunning reports whether an agent of any of p's stages still runs.
func agentRunning(ctx context.Context, env *stage.Env, p *record.Place) bool {
	for i := range p.Stages {
		if a := p.Stages[i].Agent; a != nil && !a.Ended && env.Engine.Up(ctx, a) {
			return true
		}
	}
	return false
}

// startRun makes stage st's record that of a new run of agent a from
// branch head: the run before it kept in Earlier, what the last run left
// (need, reason, delivery, block, follow-up) cleared, its budget and stuck
// limit and role as the configuration and the engine's knobs say now.
func startRun(env *stage.Env, cfg *stage.Config, p *record.Place, st *record.StageRecord, a *agentrun.Agent, head string) {
	now := a.Started
	if st.Agent != nil {
		st.Earlier = append(st.Earlier, *st.Agent)
	}
	st.State, st.Base, st.Started, st.Ended, st.Runs, st.Agent = agentrun.StateStarting, head, &now, nil, st.Runs+1, a
	st.Need, st.Reason, st.Delivered, st.At, st.Block, st.Followup, st.Starter = "", "", "", "", "", "", nil
	st.NextRound, st.Preexisting, st.Resume = "", preexisting(p, st), nil
	st.BudgetMs, st.Told = cfg.StageBudget(st.Name).Milliseconds(), false
	st.Role = cfg.Stages[st.Name].Role
	if env.Engine.Budget > 0 {
		st.BudgetMs = env.Engine.Budget.Milliseconds()
	}
	// A7: the stuck limit as the run starts: the engine's knob
	// (FLUME_STUCK_AFTER) over flume.stuckAfter over the default.
	st.StuckAfterMs = cmp.Or(env.Engine.StuckAfter, cfg.StuckAfter, env.Engine.Stuck()).Milliseconds()
}

// stageRun is a stage's next agent run before it begins: its record, its
// program, its prompt (also in the run's prompt file) and its role.
type stageRun struct {
	agent  *agentrun.Agent
	prog   agent.Program
	prompt string
	role   *stage.Role
	// resumeID is the id the program resumes the stage's earlier session
	// by, "" for a fresh session.
	resumeID string
	// sandbox is what the agent may write, nil for none (A12); inbox is
	// where its git-flume hands its delegation verbs to the place's
	// watcher, "" for a role that does not delegate (agent/broker).
	sandbox *sandbox.Sandbox
	inbox   string
}

// unenforced says why role's limits cannot be held to with program prog
// (A9, A12): a role that limits tools or paths needs flume's
// guard before every tool use, and only a program that runs it (Guarded,
// with a guard command set) does; a role that limits paths needs the
// sandbox too, whole (A13), since a shell command asks no guard (missing
// names what the run would go without, and why). "" when there is
// nothing to hold or it holds.
func unenforced(role *stage.Role, prog agent.Program, guard, missing string) string {
	if role == nil || len(role.Tools) == 0 && len(role.PathRestrictions) == 0 {
		return ""
	}
	if guard == "" || !prog.Guarded() {
		return fmt.Sprintf("role %s limits its tools or paths, and %s cannot be held to them (flume's guard runs in Claude Code, Codex and pi as shipped, or in a declared command that names {settings}); nothing was started rather than the limits silently not enforced", role.Name, prog.Name)
	}
	if len(role.PathRestrictions) > 0 && missing != "" {
		return fmt.Sprintf("role %s limits paths, and its agent would run without %s: a shell command asks no guard, so nothing was started rather than the limits silently not enforced", role.Name, missing)
	}
	return ""
}

// resumePrompt is what a resumed agent is told: it has the stage's prompt
// in its context already, so only why it goes on, and how the stage ends.
func resumePrompt(st *record.StageRecord) string {
	return st.Followup + "\n\nCommit the further work in this place, then close your last message with a STAGE REPORT as before."
}

// prepareRun makes stage st's next run: the program the place names (or
// the engine's default), the prompt rendered and written to the run's
// file, the role the stage declares, and the run's record, in the pane
// host the place's launch chose (A2). What the agent being replaced did
// is caught up in the live log first (W4).
func prepareRun(ctx context.Context, env *stage.Env, repo *git.Repo, p *record.Place, st *record.StageRecord, cfg *stage.Config) (*stageRun, error) {
	name := env.AgentName(p.Agent)
	prog, err := agent.ResolveProgram(name, cfg.Agents)
	if err != nil {
		return nil, err
	}
	prompt, err := renderPrompt(ctx, repo, p.ConfigRev(), p, st, cfg)
	if err != nil {
		return nil, err
	}
	r := &stageRun{prog: prog}
	if name := cfg.Stages[st.Name].Role; name != "" {
		if r.role, err = stage.LoadRole(ctx, repo, p.ConfigRev(), name); err != nil {
			return nil, err
		}
	}
	// how to delegate, how a delegated place ends its turn, and
	// what the stage's last run or commissioner left for this one.
	r.prompt = prompt + PromptNotes(p, st, r.role)
	// a reopened stage's agent goes on in its own session, told
	// only why, where its program resumes one and its transcript reads.
	var before *agent.Usage
	if from := st.Resume; from != nil && from.Program == prog.Name {
		if tr, err := agent.ReadTranscriptFile(from.Transcript, prog.Format); err == nil {
			if r.resumeID = prog.ResumeID(from.Session, from.Transcript); r.resumeID != "" {
				r.prompt, before = resumePrompt(st), &tr.Usage
			}
		}
	}
	run := st.Runs + 1
	logDir := stage.LogDir(repo.CommonDir, p.ID)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	promptFile := filepath.Join(logDir, fmt.Sprintf("%d-%s-%d.prompt", p.Current+1, st.Name, run))
	if err := os.WriteFile(promptFile, []byte(r.prompt), 0o644); err != nil {
		return nil, err
	}
	_ = toollog.Append(ctx, repo.CommonDir, p) // the log is evidence beside the record (W4)
	now := env.ClockNow()
	r.agent = &agentrun.Agent{
		Program: prog.Name, Format: prog.Format, Pattern: prog.Transcript, Session: agent.NewSessionID(), Host: env.Host,
		Pane: paneName(p, run), PromptFile: promptFile, Started: now, SentAt: now, Sends: 1,
	}
	if r.resumeID != "" {
		// The resumed session's own id and transcript, known from the
		// start: nothing is searched for (A3).
		r.agent.Session, r.agent.Transcript = st.Resume.Session, st.Resume.Transcript
		r.agent.Resumed, r.agent.UsageBefore = true, before
	}
	switch host := cmp.Or(p.Pane, env.Engine.Pane, "tmux"); host {
	case "print":
		r.agent.Pane = "print"
	default:
		r.agent.PaneHost = host
	}
	return r, nil
}

// beginRun begins recorded run r of stage st (A1): in its pane, or printed
// for the operator, with the guard hook of the run's settings (A9) and the
// role's tools.
func beginRun(ctx context.Context, env *stage.Env, commonDir string, p *record.Place, st *record.StageRecord, r *stageRun) error {
	a := r.agent
	vars := agent.Vars{Prompt: r.prompt, PromptFile: a.PromptFile, SessionID: a.Session, Place: p.Path, Home: agent.HomeOf(env.CallerEnv),
		ResumeID: r.resumeID, Transcript: a.Transcript}
	if env.Engine.Guard != "" {
		// A9: the guard hook, in a settings file of this run (outside the
		// place, so it never makes the work tree dirty).
		settings := strings.TrimSuffix(a.PromptFile, ".prompt") + ".settings.json"
		if err := writeRunSettings(settings, env.Engine.Guard+" --place "+p.ID, a.EventsFile()); err != nil {
			return err
		}
		vars.Settings = settings
		if r.prog.Name == "codex" && r.prog.Shipped() {
			// Codex runs the guard as the run's own PreToolUse hook, once
			// Codex trusts that exact hook.
			vars.CodexHook = codexhook.Override(env.Engine.Guard + " --codex")
			if err := trustCodexHook(ctx, env, p.Path, vars.CodexHook); err != nil {
				return err
			}
		}
		if r.prog.Name == "pi" && r.prog.Shipped() {
			ext := strings.TrimSuffix(a.PromptFile, ".prompt") + ".guard.ts"
			if err := writeGuardExtension(ext, append(strings.Fields(env.Engine.Guard), "--place", p.ID)); err != nil {
				return err
			}
			vars.Extension = ext
		}
	}
	if r.role != nil {
		vars.AllowedTools, vars.Model = r.role.Tools, r.role.Model
	}
	start := agent.Start{Program: r.prog, Vars: vars, Pane: a.Pane, Dir: p.Path, Caller: env.CallerEnv,
		Flume: agentVars(p, st.Name, a.Session, r.inbox), Resume: r.resumeID != "", Sandbox: r.sandbox, SandboxExe: env.Engine.Sandbox}
	if a.Pane != "print" {
		return agent.Begin(ctx, env.Engine.HostOf(a), start)
	}
	// A2, L3: the operator starts a printed run. A later stage starts from
	// a watcher, whose output nobody sees, so the command also goes to the
	// place's log, where status points (next).
	var line bytes.Buffer
	start.Print = &line
	if err := agent.Begin(ctx, nil, start); err != nil {
		return err
	}
	if env.Engine.Print != nil {
		fmt.Fprint(env.Engine.Print, line.String())
	}
	if log, err := stage.OpenLog(commonDir, p.ID); err == nil {
		fmt.Fprintf(log, "%s/%d start the agent yourself: %s", st.Name, st.Runs, line.Bytes())
		log.Close()
	}
	return nil
}

// agentVars are flume's variables of a stage agent (A1): agent.Begin adds
// them to the caller's cleaned environment, or prints them before the
// command.
func agentVars(p *record.Place, stageName, session, inbox string) []string {
	vars := append(record.RunVars(p), "FLUME_PLACE="+p.ID, "FLUME_STAGE="+stageName, "FLUME_SESSION="+session)
	if inbox != "" {
		vars = append(vars, broker.InboxVar+"="+inbox)
	}
	return vars
}

// EndAgent ends a stage's agent and verifies it exited (X5).
func EndAgent(ctx context.Context, env *stage.Env, a *agentrun.Agent) error {
	return agentrun.End(ctx, env.Engine.RunPanes(a), a)
}

// takenTranscripts are the transcripts the place's agents already claimed.
func takenTranscripts(p *record.Place) map[string]bool {
	taken := map[string]bool{}
	for _, st := range p.Stages {
		for _, a := range record.StageRuns(&st) {
			if a.Transcript != "" {
				taken[a.Transcript] = true
			}
		}
	}
	return taken
}

// paneName names a stage run's tmux session: unique per repository, place,
// stage and run, with no '.' or ':' (tmux target syntax).
func paneName(p *record.Place, run int) string {
	sum := sha1.Sum([]byte(p.Repo))
	id := strings.NewReplacer(".", "_", ":", "_").Replace(p.ID)
	return fmt.Sprintf("flume-%x-%s-%d-%d", sum[:3], id, p.Current+1, run)
}

// AgentState is where the current stage's agent of p stands: "up",
// "operator" (started by a person from a printed command), "exited" (by
// itself, as its record says, or found gone), "ended" (by flume); "" when
// the stage has none. Another host's agent is as its record says: "up"
// while its run has not ended there (its own host judges it; status says
// when that host is silent), never guessed "exited" from here.
func AgentState(ctx context.Context, env *stage.Env, p *record.Place) string {
	a := record.CurrentRun(p)
	switch {
	case a == nil:
		return ""
	case a.Exit != nil:
		return "exited" // by itself, as its record says (A10)
	case a.Ended:
		return "ended"
	case a.Pane == "print":
		return "operator"
	case p.Host != env.Host || env.Engine.Up(ctx, a):
		return "up" // another host's as its record says (L4)
	}
	return "exited"
}
