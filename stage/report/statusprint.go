// How status reads for people (the table), and what each stage's agent
// spent, from its transcript.

package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/jsonfmt"
	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/internal/words"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/cost"
	"github.com/git-flume/git-flume/stage/record"

	agent "github.com/git-flume/git-flume/agents"
)

// WriteStatusTable prints status for people: a line a place that fits
// TableColumns, or the terminal's columns when fewer (0: not a terminal),
// or, wide, every note of a place on its line.
func WriteStatusTable(w io.Writer, st *Status, wide bool, columns int) error {
	if !wide {
		writeNarrowTable(w, st, time.Now(), columns)
	} else if err := writeWideTable(w, st); err != nil {
		return err
	}
	for _, p := range st.Places {
		if !p.Ready.OK && !p.Ready.Running && p.Ready.Tail != "" {
			fmt.Fprintf(w, "\n%s: readying step %q exited %d; last lines:\n", term.Clean(p.Place), p.Ready.Step, p.Ready.Exit)
			for line := range strings.SplitSeq(p.Ready.Tail, "\n") {
				fmt.Fprintf(w, "  %s\n", term.Clean(line))
			}
		}
	}
	for _, pr := range st.Problems {
		fmt.Fprintf(w, "problem: %s\n", term.Clean(pr.Error))
	}
	return nil
}

// writeWideTable is status --wide: every note of a place on its line.
func writeWideTable(w io.Writer, st *Status) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLACE\tBRANCH\tSTAGE\tSTATE\tREADY\tCLAIM\tNOTE")
	for _, p := range st.Places {
		ready := "ok"
		switch {
		case p.Ready.Running:
			ready = "running"
		case !p.Ready.OK:
			ready = fmt.Sprintf("failed: %s (exit %d)", p.Ready.Step, p.Ready.Exit)
		}
		claim := "-"
		if p.Claim != nil {
			claim = p.Claim.Key
			if p.Claim.Shared {
				claim += " (shared by every session there)"
			}
		}
		notes := statusNotes(&p)
		// One line a place: what a record holds is shown, never acted on
		// by the terminal nor able to forge a line (R5).
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", term.Clean(words.TreeName(p.Place, p.Depth)), term.Clean(p.Branch), term.Clean(stageText(&p)),
			term.Clean(stateText(&p)), ready, term.Clean(claim), term.Clean(strings.Join(notes, "; ")))
	}
	return tw.Flush()
}

// statusNotes are the table's note for place p: what is unusual about it,
// what its stage spent and how long it ran, and what moves it on.
func statusNotes(p *PlaceStatus) []string {
	notes := placeNotes(p)
	notes = append(notes, stageNotes(&p.Stage, p.Previous)...)
	return append(notes, agentNotes(p)...)
}

// placeNotes say where place p stands: whose it is, how it ended, its
// worktree, what it runs, what it conflicts with.
func placeNotes(p *PlaceStatus) []string {
	var notes []string
	if p.Foreign {
		notes = append(notes, "on "+p.Host+", read-only")
	}
	if l := p.LostTo; l != nil {
		notes = append(notes, "lost: adopted as "+l.Place+" on "+l.Host+" ("+l.Why+")")
	}
	if a := p.Adopts; a != nil {
		notes = append(notes, "adopts "+a.Place+" of "+a.Host)
	}
	if h := p.Heard; h != nil && h.Silent {
		notes = append(notes, fmt.Sprintf("%s silent: last heard %s, past its limit of %s; this may be stale",
			p.Host, h.At.UTC().Format("2006-01-02 15:04:05 UTC"), time.Duration(h.LimitSeconds)*time.Second))
	}
	if p.Dropped {
		notes = append(notes, "dropped")
	}
	if p.Delegation != "" {
		notes = append(notes, "delegated by "+p.Parent+": "+p.Delegation)
	}
	if p.Worktree != "present" && !p.Foreign {
		notes = append(notes, "worktree "+p.Worktree)
	}
	if p.BranchGone {
		notes = append(notes, "branch "+p.Branch+" gone: deleted outside flume")
	}
	if p.Kept != nil {
		notes = append(notes, "kept: "+*p.Kept)
	}
	if r := p.Run; r != nil {
		notes = append(notes, runNote(r))
	}
	return append(notes, conflictNotes(p)...)
}

// tableConflicts is how many conflicts a place's line names in full, each
// with at most tableFiles of its files; past it, the line names the first
// and counts the rest, which explain and --json list. 200 places that all
// conflict printed lines of 5,918 characters otherwise (issue 46).
const tableConflicts, tableFiles = 2, 3

// conflictNotes are the table's words on place p's conflicts.
func conflictNotes(p *PlaceStatus) []string {
	var notes []string
	for i, c := range p.Conflicts {
		if i == 1 && len(p.Conflicts) > tableConflicts {
			notes = append(notes, fmt.Sprintf("and %d more conflicts: git flume explain %s", len(p.Conflicts)-i, p.Place))
			break
		}
		files := strings.Join(c.Files, ", ")
		if len(c.Files) > tableFiles {
			files = fmt.Sprintf("%s +%d files", strings.Join(c.Files[:tableFiles], ", "), len(c.Files)-tableFiles)
		}
		note := "conflicts with " + c.With + " (" + files + ")"
		if !c.Exact {
			note += ", not exact"
		}
		notes = append(notes, note)
	}
	return notes
}

// stageNotes say how the current stage st goes (its tasks, cost, budget,
// report, snapshots, need), and whether the one before it, prev, left no
// report.
func stageNotes(st *StageStatus, prev *StageStatus) []string {
	var notes []string
	if t := st.Tasks; t != nil {
		notes = append(notes, fmt.Sprintf("tasks %d/%d", t.Done, t.Total))
	}
	if st.Tokens > 0 {
		cost := "cost ?"
		if st.Cost != nil {
			cost = fmt.Sprintf("$%.4f", *st.Cost)
		}
		notes = append(notes, fmt.Sprintf("%d tokens, %s", st.Tokens, cost))
	}
	if st.BudgetMs > 0 && st.Started != nil {
		notes = append(notes, fmt.Sprintf("%s of %s", (time.Duration(st.ElapsedMs)*time.Millisecond).Round(time.Second), time.Duration(st.BudgetMs)*time.Millisecond))
	}
	if st.ReportMissing {
		notes = append(notes, "report-missing")
	}
	if prev != nil && prev.ReportMissing {
		notes = append(notes, prev.Name+": report-missing")
	}
	for _, sn := range st.Snapshots {
		notes = append(notes, "snapshot "+sn.Ref)
	}
	if st.Need != "" {
		notes = append(notes, "needs: "+st.Need)
	}
	if st.Reason != "" {
		notes = append(notes, st.Reason)
	}
	return notes
}

// agentNotes say where p's agent is, what its open child asks, and what
// to do next.
func agentNotes(p *PlaceStatus) []string {
	var notes []string
	switch {
	case p.Agent == nil:
	case p.Agent.State == "up":
		// Where to see it: git flume attach, or the pane host itself.
		notes = append(notes, "pane "+p.Agent.Pane+agentHostNote(p.Agent))
	default:
		notes = append(notes, "agent "+p.Agent.State)
	}
	if c := p.Child; c != nil && c.Need != "" {
		// the commissioner's row shows its open child's
		// question, labelled with the role it asks in.
		notes = append(notes, fmt.Sprintf("child %s: %s: %s", c.Place, c.Asks(), words.OneLine(c.Need)))
	}
	if l := p.Land; l != nil {
		note := "land: " + l.State
		if l.Approval != nil {
			note += ", approved by " + l.Approval.By
		}
		if l.Reason != "" {
			note += ": " + words.OneLine(l.Reason)
		}
		notes = append(notes, note)
	}
	if p.Stage.Next != "" {
		notes = append(notes, "next: "+p.Stage.Next)
	}
	return notes
}

func agentHostNote(a *AgentStatus) string {
	if a.PaneHost == "herdr" {
		return " (herdr)"
	}
	return ""
}

// spent fills in the tokens and cost of stage i of p from its agent's
// transcript, when there is one to read here. A configuration whose
// prices do not read leaves the cost unknown (cost names the error).
func spent(ctx context.Context, book *cost.PriceBook, commonDir string, p *record.Place, i int, ss *StageStatus) {
	if i < 0 || i >= len(p.Stages) {
		return
	}
	a := p.Stages[i].Agent
	if a == nil || a.Transcript == "" {
		return
	}
	u, ok := usageOf(commonDir, p, a)
	if !ok {
		return // removed, or not written yet
	}
	ss.Tokens = u.Sum()
	if prices, err := book.At(ctx, p.ConfigRev()); err == nil {
		ss.Cost, _, _ = cost.OfUsage(u, prices)
	}
}

// usageOf returns the usage agent a's transcript shows. status asks on
// every refresh and a transcript grows to megabytes, so the figures are
// kept beside the place's log with the transcript's size and time, and the
// transcript is read again only when it changed.
func usageOf(commonDir string, p *record.Place, a *agentrun.Agent) (agent.Usage, bool) {
	info, err := os.Stat(a.Transcript)
	if err != nil {
		return agent.Usage{}, false
	}
	path := filepath.Join(stage.LogDir(commonDir, p.ID), "tools", a.Session+".usage")
	var c usageCache
	if data, err := os.ReadFile(path); err == nil && json.Unmarshal(data, &c) == nil &&
		c.Size == info.Size() && c.ModTime == info.ModTime().UnixNano() {
		return cost.OwnUsage(a, c.Usage), true
	}
	tr, err := agent.ReadTranscriptFile(a.Transcript, a.Format)
	if err != nil {
		return agent.Usage{}, false
	}
	c = usageCache{Size: info.Size(), ModTime: info.ModTime().UnixNano(), Usage: tr.Usage}
	if data, err := json.Marshal(c); err == nil && os.MkdirAll(filepath.Dir(path), 0o755) == nil {
		_ = stage.ReplaceFile(path, data, 0o644) // best effort: a cache not written is read around
	}
	return cost.OwnUsage(a, tr.Usage), true
}

// runNote says what a place was given to run: its ports and its env
// files, those skipped with why.
func runNote(r *record.RunSetup) string {
	var parts []string
	names := make([]string, 0, len(r.Ports))
	for name := range r.Ports {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s=%d", name, r.Ports[name]))
	}
	if d := r.Deps; d != nil {
		switch {
		case len(d.Folders) == 0:
		case d.Refused != "":
			parts = append(parts, strings.Join(d.Folders, " ")+" by install (no template: "+d.Refused+")")
		case d.Built:
			parts = append(parts, strings.Join(d.Folders, " ")+" by install, then "+d.Method)
		default:
			parts = append(parts, strings.Join(d.Folders, " ")+" by "+d.Method)
		}
		parts = append(parts, d.Kept...)
	}
	for _, f := range r.Env {
		if f.Skipped != "" {
			parts = append(parts, f.Path+" not copied ("+f.Skipped+")")
		} else {
			parts = append(parts, f.Path+" copied")
		}
	}
	switch {
	case r.Failed != "":
		parts = append([]string{"setup FAILED: " + r.Failed + " (retry or git flume env --refresh sets it up again)"}, parts...)
	case r.Unfinished:
		parts = append([]string{"setup unfinished (retry or git flume env --refresh finishes it)"}, parts...)
	}
	return "run: " + strings.Join(parts, ", ")
}

// WriteStatusJSON writes st as jsonfmt.Write lays it out, byte for byte,
// a place at a time: at 10,000 places the whole document, compact then
// laid out, was the largest thing status held (issue 46).
func WriteStatusJSON(w io.Writer, st *Status) error {
	s := jsonfmt.NewStream(w)
	s.Raw(fmt.Sprintf(`{"schema":%d,"places":[`, st.Schema))
	for i := range st.Places {
		if i > 0 {
			s.Raw(",")
		}
		s.Value(&st.Places[i])
	}
	s.Raw(`],"problems":`)
	s.Value(st.Problems)
	s.Raw("}")
	return s.Close()
}
