// git flume explain: why a place's stage is in its state, from
// the evidence flume itself judged by — the record's moves, the agent's
// transcript and screen, the branch against the stage's base, the timers —
// and the command that moves it on. It reads; it moves nothing.

package report

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	agent "github.com/git-flume/git-flume/agents"
	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/internal/words"
	"github.com/git-flume/git-flume/land"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/radar"
	"github.com/git-flume/git-flume/stage/record"
)

// Explanation is the `explain --json` document, schema 1.
type Explanation struct {
	Schema int    `json:"schema"`
	Place  string `json:"place"`
	Stage  string `json:"stage"`
	Index  int    `json:"index"`
	Count  int    `json:"count"`
	Run    int    `json:"run"`
	State  string `json:"state"`
	// Why says, in a sentence, why the stage is in its state.
	Why string `json:"why"`
	// Evidence is what flume read to judge it, one item per source.
	Evidence []Evidence `json:"evidence"`
	// Next is the command that moves the stage on, "" when it moves on by
	// itself.
	Next string `json:"next"`
	// History is the record's newest moves, newest first.
	History []git.Move `json:"history"`
}

// Evidence is one thing flume read: its source (record, agent,
// transcript, screen, branch, timers, readying) and what it showed.
type Evidence struct {
	Source string `json:"source"`
	Text   string `json:"text"`
}

// Explain reads place o.Place and says why its current stage is in its
// state. Another host's place is explained from its record alone.
func Explain(ctx context.Context, env *stage.Env, o stage.PlaceOptions) (*Explanation, error) {
	repo, store, err := env.Open(ctx, o.Repo)
	if err != nil {
		return nil, err
	}
	rec, p, err := record.ReadPlace(ctx, store, o.Place)
	if err != nil {
		return nil, err
	}
	x := &Explanation{Schema: 1, Place: p.ID, Evidence: []Evidence{}}
	// The record's history is its own git process: read beside the rest.
	var history []git.Move
	var herr error
	var wg sync.WaitGroup
	wg.Go(func() { history, herr = repo.History(ctx, rec.Ref, 5) })
	err = explainStage(ctx, env, repo, store, p, x)
	wg.Wait()
	if err = cmp.Or(herr, err); err != nil {
		return nil, err
	}
	x.History = history
	return x, nil
}

// explainStage fills x with where place p's stage stands and why, the
// evidence, and the command that moves it on.
func explainStage(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, p *record.Place, x *Explanation) error {
	if p.Current >= len(p.Stages) {
		x.State, x.Why = p.Phase, "the place has no current stage"
		return nil
	}
	st := &p.Stages[p.Current]
	x.Stage, x.Index, x.Count, x.Run, x.State = st.Name, p.Current+1, len(p.Stages), st.Runs, st.State
	// away says why nothing but the record is read: another host's place,
	// or one of ours flume may not act on (its folder or git files).
	var away string
	if p.Host != env.Host {
		away = fmt.Sprintf("a place of host %s: explained from its record alone; only its owner observes it", p.Host)
	} else if err := stage.CheckHome(ctx, env, repo, p); err != nil {
		away = err.Error() + "; explained from its record alone"
	}
	local := away == ""
	var seen engine.StepSeen
	if local && st.State != record.StagePending {
		// What the engine's own step would read; nothing is written.
		var err error
		if seen, err = engine.Inspect(ctx, env, repo, p, st); err != nil {
			return err
		}
		if a := st.Agent; a != nil && !a.Ended && a.Pane != "print" && seen.Screen == nil {
			if seen.Up = env.Engine.Up(ctx, a); seen.Up {
				if text, err := env.Engine.HostOf(a).Capture(ctx, a.Pane); err == nil {
					screen := agent.ReadScreen(a.Format, text)
					seen.Screen = &screen
				}
			}
		}
	}
	x.Why = why(p, st, seen)
	x.Evidence = evidence(ctx, env, repo, p, st, seen, away)
	if local && p.Phase == record.PhaseMade && branchGone(ctx, repo, p) {
		x.Evidence = append(x.Evidence, Evidence{Source: "branch", Text: p.Branch + " is gone: deleted outside flume; its work is what " + p.Path + " holds"})
	}
	if local {
		x.Evidence = append(x.Evidence, worktreeEvidence(ctx, env, repo, store, p)...)
	}
	conflicts := radar.PlaceConflicts(ctx, env, repo, store, p)
	for _, c := range conflicts {
		x.Evidence = append(x.Evidence, Evidence{Source: "conflicts", Text: "with " + c.With + " in " + strings.Join(c.Files, ", ") + " (" + c.How() + ")"})
	}
	e := landEntry(ctx, store, p.ID)
	if e != nil {
		x.Evidence = append(x.Evidence, Evidence{Source: "lander", Text: landEvidence(e)})
	}
	if local && p.Phase == record.PhaseMade {
		x.Next = explainNext(p, agentStatus(ctx, env, p), e, conflicts, stage.LanderRunning(repo.CommonDir, env.Host))
	}
	return nil
}

// worktreeEvidence is what this host's place p holds beyond its record:
// its worktree's glance, and its open child's progress with the child's.
func worktreeEvidence(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, p *record.Place) []Evidence {
	var ev []Evidence
	if g := engine.GlanceAt(ctx, env, repo, p); g != nil {
		ev = append(ev, Evidence{Source: "worktree", Text: g.Text()})
	}
	if c := openChildProgress(ctx, env, store, p); c != nil {
		text := c.Text()
		if _, child, err := record.ReadPlace(ctx, store, c.Place); err == nil {
			if g := engine.GlanceAt(ctx, env, repo, child); g != nil {
				text += "; " + g.Text()
			}
		}
		ev = append(ev, Evidence{Source: "delegated", Text: text})
	}
	return ev
}

// explainNext is what moves a made place of this host on: its stage's
// next step, else its land entry's, else bringing a branch that
// conflicts up to date while no agent runs. lander names the lander
// running here, if one is.
func explainNext(p *record.Place, a *AgentStatus, e *land.Entry, conflicts []record.Conflict, lander string) string {
	next := engine.NextStep(p, agentStateOf(a))
	if next == "" && e != nil {
		next = landNext(e, lander)
	}
	if next == "" && (a == nil || a.State != "up") {
		next = radar.CatchUpStep(p.Branch, p.Path, conflicts)
	}
	return next
}

// why is the sentence for the stage's state.
func why(p *record.Place, st *record.StageRecord, seen engine.StepSeen) string {
	switch st.State {
	case record.StagePending:
		if p.Current > 0 {
			return "the previous stage was delivered; this one starts when flume next starts agents (the place's watcher, or any git flume command)"
		}
		return "no agent has started it: the place was launched with --pane none; git flume advance starts it"
	case agentrun.StateStarting:
		if st.Agent != nil && st.Agent.Printed() {
			// nothing was sent; the operator runs the command.
			return "its prompt is in the printed command, which the operator runs: nothing is typed; the stage goes on once the prompt shows in the agent's transcript"
		}
		return "its prompt was sent and has not shown in the agent's transcript yet: slow is not failed; flume checks the screen and sends it once more when the window passes"
	case agentrun.StateUnknown:
		return "no transcript of the agent shows yet: flume watches for it (an agent the operator starts from the printed command)"
	case agentrun.StateWorking:
		return fmt.Sprintf("its prompt showed in the agent's transcript and its deliverable (%s) is not in git yet", engine.DescribeDeliverable(st.Deliverable))
	case agentrun.StateWaiting:
		return "the agent ended its turn asking: " + st.Need
	case agentrun.StateStuck:
		reason := st.Reason
		if reason == "" || !strings.HasPrefix(reason, "quiet") {
			reason = fmt.Sprintf("quiet for %s", seen.Quiet.Round(time.Second))
		}
		return fmt.Sprintf("the agent's transcript has been quiet past the stuck limit, with no deliverable and no need (%s); flume ends nothing on its own", reason)
	case agentrun.StateDelivered, record.StateLanded:
		return "delivered: " + st.Delivered
	}
	return st.Reason // blocked, never-started, cut: the reason recorded
}

// evidence lists what flume read: the record's last move, the agent, its
// transcript and screen, the branch, the timers, the readying.
func evidence(ctx context.Context, env *stage.Env, repo *git.Repo, p *record.Place, st *record.StageRecord, seen engine.StepSeen, away string) []Evidence {
	var ev []Evidence
	add := func(source, text string) {
		if text != "" {
			ev = append(ev, Evidence{Source: source, Text: text})
		}
	}
	add("record", away)
	local := away == ""
	if r := p.Ready; r != nil && !r.OK && r.Running == nil {
		add("readying", fmt.Sprintf("step %q exited %d", r.Step, r.Exit))
	}
	if r := p.Run; r != nil {
		add("run", strings.TrimPrefix(runNote(r), "run: ")+"; compose project "+record.ComposeName(p))
	}
	now := seen.Now
	if now.IsZero() {
		now = env.ClockNow()
	}
	if a := st.Agent; a != nil {
		add("agent", agentEvidence(a, seen, local, now))
		add("sandbox", sandboxEvidence(a.Sandbox, a.Layers, seen.Refused))
		if n, last := stage.RefusedObjects(repo.CommonDir, p.ID); n > 0 {
			add("objects", fmt.Sprintf("%d refused as flume took in what its agent wrote, each not what its name says (the last: %s); the shared store has none of them", n, term.Clean(last)))
		}
		add("transcript", transcriptEvidence(a, seen, local))
		add("screen", screenEvidence(seen.Screen))
	}
	if local && seen.PlaceGone != "" {
		add("place", seen.PlaceGone)
	}
	if local && seen.Head != "" {
		add("branch", branchEvidence(ctx, repo, p, st, seen))
	}
	if st.Started != nil {
		add("timers", timerEvidence(st, now))
	}
	return ev
}

// sandboxEvidence is what holds what the agent writes (A12), by the
// layers it runs behind (A13; a record before them names Landlock alone)
// and, when its transcript has one, the last write the system refused
// it, in its tool's own words.
func sandboxEvidence(note, layers, refused string) string {
	layers = cmp.Or(layers, "Landlock")
	switch {
	case note == "landlock" && refused != "":
		return fmt.Sprintf("%s: it writes only its place and its branch; the last write refused, in its transcript: %q", term.Clean(layers), term.Clean(refused))
	case note == "landlock":
		return term.Clean(layers) + ": it writes only its place and its branch; anything else it tries is refused by the kernel (its tools then say Permission denied or Read-only file system)"
	case strings.HasPrefix(note, "off: "):
		return "none: " + strings.TrimPrefix(note, "off: ") + "; it writes whatever you may"
	}
	return ""
}

// agentEvidence is how the stage's agent stands and how its prompt went.
func agentEvidence(a *agentrun.Agent, seen engine.StepSeen, local bool, now time.Time) string {
	state := "running"
	switch {
	case a.Exit != nil:
		state = "ended by itself: " + a.Exit.String()
	case a.Ended:
		state = "ended"
	case a.Printed():
		state = "started by the operator from the printed command"
	case local && seen.Exit != nil:
		state = "ended by itself: " + seen.Exit.String()
	case local && !seen.Up:
		state = "its pane has exited"
	}
	sent := fmt.Sprintf("prompt sent %d time(s), last %s ago", a.Sends, since(now, a.SentAt))
	if a.Printed() {
		// Nothing was typed: the prompt is the printed command's
		// argument, given by the operator.
		sent = fmt.Sprintf("prompt printed for the operator %s ago", since(now, a.SentAt))
	}
	return fmt.Sprintf("%s, session %s, pane %s: %s; %s", a.Program, a.Session, a.Pane, state, sent)
}

// transcriptEvidence is what the agent's transcript showed; "" for
// another host's place, whose transcript is not read here.
func transcriptEvidence(a *agentrun.Agent, seen engine.StepSeen, local bool) string {
	switch {
	case a.Transcript == "" && seen.Found == "":
		return fmt.Sprintf("none found yet (%s)", a.Pattern)
	case !local:
		return ""
	}
	text := fmt.Sprintf("%s: prompt shown: %s; last turn: %s; quiet for %s", a.Transcript+seen.Found, yesNo(seen.Confirmed), cmp.Or(seen.Turn, "unknown"), seen.Quiet.Round(time.Second))
	if seen.Need != "" {
		text += "; NEEDS: " + seen.Need
	}
	if last := words.FirstLine(strings.TrimSpace(seen.LastAssistant)); last != "" {
		text += fmt.Sprintf("; last message: %q", clip(last, 160))
	}
	return text
}

// screenEvidence is what the agent's screen showed, "" when it was not
// read.
func screenEvidence(s *agent.Screen) string {
	if s == nil {
		return ""
	}
	what := "the agent's ready composer"
	switch {
	case s.Dialog:
		what = "a dialog flume never types into"
	case s.Busy:
		what = "busy, a turn in progress"
	case !s.Ready:
		what = "not the agent's composer"
	}
	return fmt.Sprintf("%s: %q", what, clip(s.Words, 200))
}

// branchEvidence is where the place's branch stands against the stage's
// deliverable.
func branchEvidence(ctx context.Context, repo *git.Repo, p *record.Place, st *record.StageRecord, seen engine.StepSeen) string {
	text := fmt.Sprintf("%s at %.12s", p.Branch, seen.Head)
	if st.Base != "" {
		if n, err := repo.CountBetween(ctx, st.Base, seen.Head); err == nil {
			text += fmt.Sprintf(", %d commit(s) since the stage began at %.12s", n, st.Base)
		}
	}
	text += "; deliverable " + engine.DescribeDeliverable(st.Deliverable) + ": "
	if seen.Delivered {
		text += "in git (" + seen.What + ")"
	} else {
		text += "not yet"
	}
	if t := seen.Tasks; t != nil {
		text += fmt.Sprintf("; tasks %d/%d", t.Done, t.Total)
	}
	return text
}

// timerEvidence is the stage's clock: since it started, its budget, when
// it counts as stuck, and the nudges it had.
func timerEvidence(st *record.StageRecord, now time.Time) string {
	text := fmt.Sprintf("started %s ago", since(now, *st.Started))
	if st.BudgetMs > 0 {
		text += fmt.Sprintf(", budget %s", time.Duration(st.BudgetMs)*time.Millisecond)
	}
	if st.StuckAfterMs > 0 {
		text += fmt.Sprintf(", stuck after %s quiet", time.Duration(st.StuckAfterMs)*time.Millisecond)
	}
	if st.Reminded {
		text += ", reminded once"
	}
	if st.Told {
		text += ", told to finish at three quarters"
	}
	return text
}

func since(now, t time.Time) time.Duration { return max(now.Sub(t), 0).Round(time.Second) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// landEntry is place id's entry with the lander, nil when it has none or
// it does not read as one.
func landEntry(ctx context.Context, store *refs.Store, id string) *land.Entry {
	rec, err := store.Read(ctx, land.Ref(id))
	if err != nil {
		return nil
	}
	var e land.Entry
	if rec.Decode(&e) != nil {
		return nil
	}
	return &e
}

// landEvidence says where a place's entry with the lander stands (Q12):
// its state and tip, why it came back, its last proof (the tip it was
// made on, the candidate, the places it carries, each check), and who
// approved it.
func landEvidence(e *land.Entry) string {
	text := fmt.Sprintf("%s at %.12s for %s", e.State, e.Tip, e.Target)
	if e.Reason != "" {
		text += ": " + e.Reason
	}
	if len(e.Conflicts) > 0 {
		text += "; conflicts in " + strings.Join(e.Conflicts, ", ")
	}
	if p := e.Proof; p != nil {
		verdict := "red"
		if p.Passed {
			verdict = "green"
		}
		text += fmt.Sprintf("; proof %s: candidate %.12s on %.12s", verdict, p.Candidate, p.Base)
		if len(p.Places) > 1 {
			text += " carrying " + strings.Join(p.Places, ", ")
		}
		for _, c := range p.Checks {
			text += fmt.Sprintf("; check %q exited %d in %d ms", strings.Join(c.Argv, " "), c.Exit, c.DurationMs)
		}
	}
	if e.Approved() {
		text += "; approved by " + e.Approval.By
	}
	if e.Voided > 0 {
		text += fmt.Sprintf("; %d proof%s voided by a moving target", e.Voided, words.Plural(e.Voided))
	}
	return text
}

// WriteExplain prints x as explain shows it: the state, why, the
// evidence, what moves it on, and the record's history newest first.
func WriteExplain(w io.Writer, x *Explanation) {
	fmt.Fprintf(w, "%s: stage %s (%d/%d), run %d: %s\n", x.Place, term.Clean(x.Stage), x.Index, x.Count, x.Run, term.Clean(x.State))
	fmt.Fprintf(w, "why: %s\n", term.Clean(x.Why))
	if len(x.Evidence) > 0 {
		fmt.Fprintln(w, "evidence:")
		for _, e := range x.Evidence {
			fmt.Fprintf(w, "  %-10s  %s\n", e.Source, term.Clean(e.Text))
		}
	}
	if x.Next != "" {
		fmt.Fprintf(w, "next: %s\n", term.Clean(x.Next))
	}
	fmt.Fprintln(w, "history (newest first):")
	for _, m := range x.History {
		fmt.Fprintf(w, "  %s  %s\n", m.At.UTC().Format("2006-01-02 15:04:05"), term.Clean(m.Message))
	}
}

// clip cuts s to n bytes at most, marking the cut, never inside a
// character.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
