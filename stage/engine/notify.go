// Notifications: when the engine moves a stage to a state that
// waits for someone or ends it — waiting, blocked, stuck, delivered,
// landed, cut, never-started — the declared notifier is run once, by the
// process whose compare-and-swap made that move, with the event as JSON
// on its standard input. At most once: a process killed between the move
// and the notifier loses that one notification, never repeats it.

package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/cost"
	"github.com/git-flume/git-flume/stage/record"
)

// Event is what the notifier reads on standard input, schema 1.
type Event struct {
	Schema int    `json:"schema"`
	Event  string `json:"event"` // the stage's new state
	Place  string `json:"place"`
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	Stage  string `json:"stage"`
	Index  int    `json:"index"`
	Count  int    `json:"count"`
	Need   string `json:"need,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Delivered says what ended a delivered or landed stage.
	Delivered string    `json:"delivered,omitempty"`
	At        time.Time `json:"at"`
	// Message is one line for a person, naming the reply (Reply).
	Message string `json:"message"`
	// Reply is the command that answers or moves the place on, "" when
	// nothing is asked.
	Reply string `json:"reply,omitempty"`
	// Costs is the cost table of the place's tree (as `git flume cost`
	// prints it) when this event ends its last stage.
	Costs string `json:"costs,omitempty"`
	// Conflict is a new conflict of the place (event "conflict").
	Conflict *record.Conflict `json:"conflict,omitempty"`
	// Land is the place's entry with the lander as the lander left it
	// (event "land": landed, returned, or proven and waiting for an
	// approval), its proof included.
	Land any `json:"land,omitempty"`
	// Page is the export page written for this event ([notify] export).
	Page string `json:"page,omitempty"`
	// Child is the place delegated to (event "delegated").
	Child string `json:"child,omitempty"`
}

// notifyTimeout bounds a notifier: the engine's step waits for it.
const notifyTimeout = 10 * time.Second

// notifiable reports a state a person is told of.
func notifiable(state string) bool {
	switch state {
	case agentrun.StateWaiting, agentrun.StateBlocked, agentrun.StateStuck, agentrun.StateDelivered, record.StateLanded, agentrun.StateCut, agentrun.StateNeverStarted, agentrun.StateParked:
		return true
	}
	return false
}

// notify runs the declared notifier for stage i of p, which this process
// just moved to its state. A notifier that fails is told to env.Out and
// changes nothing: the record is the truth.
func notify(ctx context.Context, r *stage.Repository, p *record.Place, i int) {
	env, repo := r.Env, r.Git
	st := &p.Stages[i]
	if !notifiable(st.State) || p.Parent != nil {
		return // a delegated place answers to its commissioner, not a person
	}
	costs := ""
	if i == len(p.Stages)-1 && (st.State == agentrun.StateDelivered || st.State == record.StateLanded || st.State == agentrun.StateCut) {
		costs = endSummary(ctx, env, repo, p)
	}
	cfg, err := r.Config(ctx, p.ConfigRev())
	if err != nil {
		return
	}
	page := WritePage(ctx, r, p, cfg, exportMoment(p, i))
	if cfg.Notify.Command == "" {
		return
	}
	ev := stageEvent(env, p, i, st.State, fmt.Sprintf("%s: stage %s %s", p.ID, st.Name, st.State))
	ev.Need, ev.Reason, ev.Delivered = st.Need, st.Reason, st.Delivered
	switch {
	case st.Need != "":
		ev.Message += ": needs " + st.Need
	case st.Delivered != "":
		ev.Message += ": " + st.Delivered
	case st.Reason != "":
		ev.Message += ": " + st.Reason
	}
	switch st.State {
	case agentrun.StateWaiting:
		ev.Reply = fmt.Sprintf("git flume tell %s 'ANSWER'", p.ID)
	case agentrun.StateBlocked, agentrun.StateStuck, agentrun.StateCut, agentrun.StateNeverStarted:
		ev.Reply = NextStep(p, AgentState(ctx, env, p))
	}
	if ev.Reply != "" {
		ev.Message += "; reply: " + ev.Reply
	}
	ev.Costs = costs
	SendEvent(ctx, env, p, cfg, ev.withPage(page))
}

// stageEvent is event of stage i of p, said by message, at this moment.
func stageEvent(env *stage.Env, p *record.Place, i int, event, message string) Event {
	return Event{Schema: 1, Event: event, Place: p.ID, Repo: p.Repo, Branch: p.Branch, Stage: p.Stages[i].Name, Index: i + 1,
		Count: len(p.Stages), At: env.NowUTC(), Message: message}
}

// withPage is ev naming the export page written for it, if any.
func (ev Event) withPage(page string) Event {
	if page != "" {
		ev.Page, ev.Message = page, ev.Message+"; page: "+page
	}
	return ev
}

// exportMoment is the [notify] export moment stage i of p reached with
// its state: finished (its last stage delivered or landed), blocked (a
// person must act), or "".
func exportMoment(p *record.Place, i int) string {
	switch p.Stages[i].State {
	case agentrun.StateDelivered, record.StateLanded:
		if i == len(p.Stages)-1 {
			return "finished"
		}
	case agentrun.StateWaiting, agentrun.StateBlocked, agentrun.StateStuck, agentrun.StateNeverStarted, agentrun.StateCut:
		return "blocked"
	}
	return ""
}

// WritePage writes top-level place p's export page when cfg's [notify]
// export names moment, as <common dir>/flume/pages/<place>.html (its
// children's pages beside it, as the page links them), and returns its
// path; "" when none is asked or it could not be written (said on
// env.Out: the record is the truth).
func WritePage(ctx context.Context, r *stage.Repository, p *record.Place, cfg *stage.Config, moment string) string {
	env := r.Env
	if moment == "" || p.Parent != nil || !slices.Contains(cfg.NotifyExport, moment) || env.Engine.Export == nil {
		return ""
	}
	var b bytes.Buffer
	if err := env.Engine.Export(ctx, env, p.Repo, p.ID, &b); err != nil {
		fmt.Fprintf(env.Out, "export %s: %v\n", p.ID, err)
		return ""
	}
	path := filepath.Join(r.Git.CommonDir, "flume", "pages", p.ID+".html")
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		err = stage.ReplaceFile(path, b.Bytes(), 0o644)
	}
	if err != nil {
		fmt.Fprintf(env.Out, "export %s: %v\n", p.ID, err)
		return ""
	}
	return path
}

// NotifyDelegated tells of commissioner p's new child ([notify] event
// "delegated"), after the child's launch recorded it, with its page when
// [notify] export names delegated. A delegated commissioner answers to
// its own commissioner and tells no one.
func NotifyDelegated(ctx context.Context, r *stage.Repository, p *record.Place, child string) {
	if p.Parent != nil || p.Current >= len(p.Stages) {
		return
	}
	cfg, err := r.Config(ctx, p.ConfigRev())
	if err != nil {
		return
	}
	page := WritePage(ctx, r, p, cfg, "delegated")
	if cfg.Notify.Command == "" {
		return
	}
	ev := stageEvent(r.Env, p, p.Current, "delegated", fmt.Sprintf("%s: stage %s delegated to %s", p.ID, p.Stages[p.Current].Name, child))
	ev.Child = child
	SendEvent(ctx, r.Env, p, cfg, ev.withPage(page))
}

// SendEvent runs the declared notifier with ev on its standard input. A
// notifier that fails is told to env.Out and changes nothing: the record
// is the truth.
func SendEvent(ctx context.Context, env *stage.Env, p *record.Place, cfg *stage.Config, ev Event) {
	// A notifier shows the message to a person: what a record or a
	// transcript put in it is escaped (R5).
	ev.Message = term.Clean(ev.Message)
	data, _ := json.Marshal(ev)
	argv, err := cfg.Notify.Argv()
	if err != nil || len(argv) == 0 {
		fmt.Fprintf(env.Out, "notify %s: %v\n", p.ID, err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	var out bytes.Buffer
	err = proc.Run(ctx, proc.Cmd{Path: argv[0], Args: argv[1:], Dir: p.Repo, Env: stage.StepEnv(env.CallerEnv, p),
		Stdin: bytes.NewReader(append(data, '\n')), Stdout: &out, Stderr: &out})
	if err != nil {
		fmt.Fprintf(env.Out, "notify %s: the notifier %q failed: %v: %s\n", p.ID, cfg.Notify.Command, err, bytes.TrimSpace(out.Bytes()))
	}
}

// endSummary is the cost table of a top-level place's tree, written to its
// log when its last stage ends (the unfolding notes print it when the
// top-level work ends), and returned for the notification. A
// table that cannot be read is said in the log and left out.
func endSummary(ctx context.Context, env *stage.Env, repo *git.Repo, p *record.Place) string {
	var b bytes.Buffer
	costs, err := cost.Read(ctx, env, p.Repo, p.ID)
	if err == nil {
		err = cost.Write(&b, costs)
	}
	f, lerr := stage.OpenLog(repo.CommonDir, p.ID)
	if lerr != nil {
		return b.String()
	}
	defer f.Close()
	stamp := env.NowUTC().UTC().Format("2006-01-02 15:04:05")
	if err != nil {
		fmt.Fprintf(f, "%s cost summary: not read: %v\n", stamp, err)
		return ""
	}
	fmt.Fprintf(f, "%s cost summary (the place's last stage ended):\n%s", stamp, b.String())
	return b.String()
}
