// Short reports for people: what a launch made, what doctor found, what a
// sync moved, what a closing verb's tidy kept.

package report

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/sandbox"

	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/internal/words"
	"github.com/git-flume/git-flume/land"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage/doctor"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
)

// WriteDoctor writes what doctor found, a line a check.
func WriteDoctor(w io.Writer, d *doctor.Doctor) {
	fmt.Fprintf(w, "git %s\n", d.Git)
	if d.PaneHostProblem != "" {
		fmt.Fprintf(w, "pane host %s: missing: %s\n", d.PaneHost, d.PaneHostProblem)
	} else {
		fmt.Fprintf(w, "pane host %s: ok\n", d.PaneHost)
	}
	switch {
	case d.Repo == "":
	case d.Hooks:
		fmt.Fprintf(w, "hooks in %s: ok\n", d.Repo)
	default:
		fmt.Fprintf(w, "hooks in %s: missing: run git flume install\n", d.Repo)
	}
	switch {
	case d.Repo == "":
	case d.CopyOnWrite:
		fmt.Fprintf(w, "copy-on-write clones in %s: yes ([run] deps are cloned)\n", d.Repo)
	default:
		fmt.Fprintf(w, "copy-on-write clones in %s: no (%s): [run] deps are copied in full\n", d.Repo, d.CopyOnWriteProblem)
	}
	if d.SandboxProblem != "" {
		fmt.Fprintf(w, "agent sandbox: none: %s; agents write whatever you may, and roles with path-restrictions are refused\n", d.SandboxProblem)
	} else {
		fmt.Fprintf(w, "agent sandbox: Landlock %d: an agent writes only its place\n", d.Landlock)
	}
	refused := ""
	for _, l := range d.Layers {
		held := "held"
		if !l.Held {
			held = "not held"
			if l.Name != sandbox.LayerObjects {
				refused = "; a role with path-restrictions is refused while a layer is not held"
			}
		}
		fmt.Fprintf(w, "  layer %s: %s: %s\n", l.Name, held, l.Why)
	}
	if refused != "" {
		fmt.Fprintf(w, "  %s\n", strings.TrimPrefix(refused, "; "))
	}
	fmt.Fprintf(w, "agents (a launch uses %s unless --agent or FLUME_AGENT says otherwise):\n", d.Default)
	for _, r := range d.Agents {
		state := "cannot start here"
		if r.CanStart {
			state = "can start"
		}
		line := "  " + r.Name + ": " + state
		if r.Version != "" {
			line += ", " + r.Version
		}
		fmt.Fprintln(w, line)
		for _, c := range r.Checks {
			fmt.Fprintf(w, "    %-7s %-11s %s\n", c.Status, c.Name, c.Detail)
		}
	}
}

// WriteSync writes what a sync moved, a line a ref, or that nothing
// needed to.
func WriteSync(w io.Writer, rep *refs.SyncReport) {
	for _, l := range []struct {
		what string
		refs []string
	}{{"fetched", rep.Fetched}, {"pushed", rep.Pushed}, {"deleted on " + rep.Remote, rep.Deleted}, {"removed here", rep.Removed}} {
		for _, r := range l.refs {
			fmt.Fprintf(w, "%s %s\n", l.what, r)
		}
	}
	for _, r := range slices.Sorted(maps.Keys(rep.Kept)) {
		fmt.Fprintf(w, "kept %s: %s\n", term.Clean(r), term.Clean(rep.Kept[r]))
	}
	if len(rep.Fetched)+len(rep.Pushed)+len(rep.Deleted)+len(rep.Removed)+len(rep.Kept) == 0 {
		fmt.Fprintf(w, "in sync with %s\n", rep.Remote)
	}
}

// WriteKept says what the tidy that closed a delegation kept, if it did.
func WriteKept(w io.Writer, p *record.Place) {
	if p.Phase != record.PhaseTidied && p.Kept != "" {
		fmt.Fprintf(w, "%s: kept: %s\n", p.ID, term.Clean(p.Kept))
	}
}

// WriteLaunched says what a launch made and, when its first stage already
// moved, where that stage stands and, given next, what moves it on.
func WriteLaunched(w io.Writer, p *record.Place, next string) {
	fmt.Fprintf(w, "launched %s: %s on branch %s (from %.12s, target %s)\n", p.ID, p.Path, p.Branch, p.Base, p.Target)
	st := p.Stages[p.Current]
	if st.State == record.StagePending {
		return
	}
	fmt.Fprintf(w, "stage %s: %s", st.Name, st.State)
	if st.Reason != "" {
		fmt.Fprintf(w, ": %s", term.Clean(st.Reason))
	}
	fmt.Fprintln(w)
	if a := st.Agent; a != nil && strings.HasPrefix(a.Sandbox, "off: ") {
		// A12: an agent that runs without its sandbox is said so, once.
		fmt.Fprintf(w, "sandbox: none: %s; the agent writes whatever you may\n", term.Clean(strings.TrimPrefix(a.Sandbox, "off: ")))
	}
	if next != "" {
		fmt.Fprintf(w, "next: %s\n", term.Clean(next))
	}
}

// WriteWaited writes how a stage that wait followed ended, or why it
// needs someone, with its agent's last tool calls and its report.
func WriteWaited(w io.Writer, o *engine.Outcome) {
	line := fmt.Sprintf("%s: stage %s %s", o.Place, o.Stage, o.State)
	switch {
	case o.Delivered != "":
		line += ": " + o.Delivered
	case o.Need != "" && o.Role != "":
		line += ": its " + o.Role + " needs " + o.Need
	case o.Need != "":
		line += ": needs " + o.Need
	case o.Reason != "":
		line += ": " + o.Reason
	}
	if o.Next != "" {
		line += "; stage " + o.Next + " started"
	}
	if o.ReportMissing {
		line += " (report-missing)"
	}
	if o.Delegation != "" {
		line += "; delegation " + o.Delegation
	}
	fmt.Fprintln(w, line)
	if len(o.LastTools) > 0 {
		fmt.Fprintf(w, "last tool calls: %s\n", strings.Join(o.LastTools, " | "))
	}
	if g := o.Worktree; g != nil {
		fmt.Fprintf(w, "worktree: %s\n", term.Clean(g.Text()))
	}
	if r := o.Report; r != nil {
		fmt.Fprintf(w, "report:\n  done: %s\n  files: %s\n  notes: %s\n  blockers: %s\n", r.Done, r.Files, r.Notes, r.Blockers)
	}
}

// WriteLanding writes what a run of the lander did with each entry, and
// what a person does next for one it returned; it reports whether one was.
func WriteLanding(w io.Writer, done []land.Outcome) (returned bool) {
	for _, o := range done {
		e := o.Entry
		switch {
		case o.Waits != "":
			fmt.Fprintf(w, "%s: waits: %s\n", e.Place, o.Waits)
		case o.Voided:
			fmt.Fprintf(w, "%s: proof void, %s moved while it was checked; proven again on its new tip\n", e.Place, e.Target)
		case e.State == land.Proven:
			fmt.Fprintf(w, "%s: proven on %s at %.12s (candidate %.12s; %d check%s passed), waiting for approval: git flume approve %s\n",
				e.Place, e.Target, e.Proof.Base, e.Proof.Candidate, len(e.Proof.Checks), words.Plural(len(e.Proof.Checks)), e.Place)
		case e.State == land.Landed:
			batch := ""
			if n := len(e.Proof.Places); n > 1 {
				batch = fmt.Sprintf(" with %d other%s", n-1, words.Plural(n-1))
			}
			fmt.Fprintf(w, "%s: landed on %s at %.12s (from %.12s%s; %d check%s passed)\n", e.Place, e.Target, e.Proof.Candidate, e.Proof.Base, batch, len(e.Proof.Checks), words.Plural(len(e.Proof.Checks)))
		default:
			returned = true
			fmt.Fprintf(w, "%s: returned: %s\n", e.Place, e.Reason)
			if len(e.Conflicts) > 0 {
				fmt.Fprintf(w, "  conflicts: %s\n", strings.Join(e.Conflicts, ", "))
			}
			if p := e.Proof; p != nil && len(p.Checks) > 0 && strings.TrimSpace(p.Checks[len(p.Checks)-1].Tail) != "" {
				fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(strings.TrimRight(p.Checks[len(p.Checks)-1].Tail, "\n"), "\n", "\n  "))
			}
			switch {
			case o.Restarted:
				fmt.Fprintf(w, "its submit stage was started again, its agent told why\n")
			case o.Told:
				fmt.Fprintf(w, "its agent was told, and submits again once its branch is fixed\n")
			case o.NotTold != "":
				fmt.Fprintf(w, "its agent could not be told: %s\n", o.NotTold)
				fallthrough
			default:
				fmt.Fprintf(w, "next: fix %s's branch, then git flume submit %s\n", e.Place, e.Place)
			}
		}
	}
	return returned
}

// WriteWaiting lists the entries waiting for a reviewer (Q7), as waiting
// reads them: each proven candidate, what to look at, and how to approve.
func WriteWaiting(ctx context.Context, w io.Writer, waiting func(context.Context) ([]*land.Entry, error)) error {
	entries, err := waiting(ctx)
	if err != nil {
		return err
	}
	for _, e := range entries {
		fmt.Fprintf(w, "%s: proven on %s at %.12s: git diff %.12s %.12s; git flume approve %s\n", e.Place, e.Target, e.Proof.Base, e.Proof.Base, e.Proof.Candidate, e.Place)
	}
	return nil
}

// PlaceEnv is env --json's document: a place's run variables by name,
// and its env files as copied or skipped.
type PlaceEnv struct {
	Schema int               `json:"schema"`
	Place  string            `json:"place"`
	Vars   map[string]string `json:"vars"`
	Env    []record.EnvFile  `json:"env"`
}

// NewPlaceEnv is place id's env document, from vars (NAME=VALUE each).
func NewPlaceEnv(id string, vars []string, files []record.EnvFile) *PlaceEnv {
	m := map[string]string{}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return &PlaceEnv{Schema: 1, Place: id, Vars: m, Env: files}
}

// WriteEnv prints vars as shell assignments to w (env, for eval), and
// each env file not copied, as a comment, to errOut.
func WriteEnv(w, errOut io.Writer, vars []string, files []record.EnvFile) {
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(w, "export %s=%s\n", k, agent.ShellQuote(v))
	}
	for _, f := range files {
		if f.Skipped != "" {
			fmt.Fprintf(errOut, "# %s not copied: %s\n", term.Clean(f.Path), term.Clean(f.Skipped))
		}
	}
}
