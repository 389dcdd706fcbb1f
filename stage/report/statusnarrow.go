// How status reads on a terminal by default: a line a place that fits
// 120 columns at any N (issue 47), with the rest in explain, --wide and
// --json.

package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/internal/words"
	"github.com/git-flume/git-flume/stage/record"
)

// TableColumns is the width of a place's line in status by default.
const TableColumns = 120

// The widest the fixed columns get; a longer value is cut, marked "…"
// (the whole of it is in --wide, explain and --json).
const (
	PlaceColumn = 36
	StageColumn = 16
	StateColumn = 22
	ageColumn   = 4
	// ReasonAtLeast is the room the reason keeps beside a long next step.
	ReasonAtLeast = 20
)

// summarize is the narrow line of place p at now, each part escaped
// (R5): its reason is the notes that say what is wrong or awaited first,
// joined on one line.
func summarize(p *PlaceStatus, now time.Time) term.Row {
	return term.Row{
		Cols:   []string{term.Clean(words.TreeName(p.Place, p.Depth)), term.Clean(stageText(p)), term.Clean(stateText(p)), ageOf(p, now)},
		Reason: term.Clean(strings.Join(ReasonNotes(p), "; ")),
		Next:   term.Clean(words.OneLine(p.Stage.Next)),
	}
}

// stageText is p's stage as both tables name it: "code (1/2)".
func stageText(p *PlaceStatus) string {
	return fmt.Sprintf("%s (%d/%d)", p.Stage.Name, p.Stage.Index, p.Stage.Count)
}

// stateText is p's state as both tables say it: a tidied place's work is
// over, its stage's state as it was then, so it reads "tidied (landed)".
func stateText(p *PlaceStatus) string {
	if p.Phase != record.PhaseTidied {
		return p.Stage.State
	}
	if p.Tidied != "" {
		return "tidied (" + p.Tidied + ")"
	}
	return "tidied"
}

// ageOf is how long p's stage has run (until it ended), or since the
// place was made when no stage has started: 12s, 4m, 5h, 3d.
func ageOf(p *PlaceStatus, now time.Time) string {
	d := time.Duration(p.Stage.ElapsedMs) * time.Millisecond
	if p.Stage.Started == nil {
		if p.Created.IsZero() {
			return "-"
		}
		d = now.Sub(p.Created)
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d/time.Second)))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// ReasonNotes are what a person reads first about place p, most urgent
// first: a lost host or failed setup, what its stage needs, the
// lander's verdict, why its stage stopped, its child's question, its
// conflicts; the rest
// (ports, cost, panes, snapshots) is in --wide and explain.
func ReasonNotes(p *PlaceStatus) []string {
	var notes []string
	if l := p.LostTo; l != nil {
		notes = append(notes, "lost: adopted as "+l.Place+" on "+l.Host)
	}
	if a := p.Adopts; a != nil {
		notes = append(notes, "adopts "+a.Place+" of "+a.Host)
	}
	if h := p.Heard; h != nil && h.Silent {
		notes = append(notes, p.Host+" silent since "+h.At.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if r := p.Run; r != nil && r.Failed != "" {
		notes = append(notes, "setup FAILED: "+r.Failed)
	} else if r != nil && r.Unfinished {
		notes = append(notes, "setup unfinished")
	}
	if !p.Ready.OK && !p.Ready.Running {
		notes = append(notes, fmt.Sprintf("readying failed: %s (exit %d)", p.Ready.Step, p.Ready.Exit))
	}
	if p.Dropped {
		notes = append(notes, "dropped")
	}
	if p.Kept != nil {
		notes = append(notes, "kept: "+*p.Kept)
	}
	if p.Worktree != "present" && !p.Foreign {
		notes = append(notes, "worktree "+p.Worktree)
	}
	if p.BranchGone {
		notes = append(notes, "branch "+p.Branch+" gone: deleted outside flume")
	}
	if p.Stage.Need != "" {
		notes = append(notes, "needs: "+words.OneLine(p.Stage.Need))
	}
	if l := p.Land; l != nil && l.Reason != "" {
		// the lander's verdict, ahead of whatever the stage says since
		// (a reminder to its agent), so that it stays in view
		notes = append(notes, "land: "+l.State+": "+words.OneLine(l.Reason))
	} else if l != nil {
		notes = append(notes, "land: "+l.State)
	}
	if p.Stage.Reason != "" {
		notes = append(notes, words.OneLine(p.Stage.Reason))
	}
	if c := p.Child; c != nil && c.Need != "" {
		notes = append(notes, fmt.Sprintf("child %s: %s: %s", c.Place, c.Asks(), words.OneLine(c.Need)))
	}
	return append(notes, laterNotes(p)...)
}

// laterNotes are the reason's less urgent notes on place p.
func laterNotes(p *PlaceStatus) []string {
	var notes []string
	if n := len(p.Conflicts); n > 0 {
		note := "conflicts with " + p.Conflicts[0].With
		if n > 1 {
			note += fmt.Sprintf(" and %d more", n-1)
		}
		notes = append(notes, note)
	}
	if p.Stage.ReportMissing {
		notes = append(notes, "report-missing")
	}
	if p.Previous != nil && p.Previous.ReportMissing {
		notes = append(notes, p.Previous.Name+": report-missing")
	}
	if p.Delegation != "" {
		notes = append(notes, "delegated by "+p.Parent+": "+p.Delegation)
	}
	if p.Foreign {
		notes = append(notes, "on "+p.Host+", read-only")
	}
	if a := p.Agent; a != nil && a.State != "up" {
		notes = append(notes, "agent "+a.State)
	}
	if t := p.Stage.Tasks; t != nil {
		notes = append(notes, fmt.Sprintf("tasks %d/%d", t.Done, t.Total))
	}
	if p.Ready.Running {
		notes = append(notes, "readying")
	}
	return notes
}

// writeNarrowTable prints st's places a line each, every line at most
// TableColumns wide, or as wide as the terminal when it is narrower
// (term.FitLines).
func writeNarrowTable(w io.Writer, st *Status, now time.Time, columns int) {
	rows := []term.Row{{Cols: []string{"PLACE", "STAGE", "STATE", "AGE"}, Reason: "REASON", Next: "NEXT"}}
	for i := range st.Places {
		rows = append(rows, summarize(&st.Places[i], now))
	}
	if !slices.ContainsFunc(rows[1:], func(r term.Row) bool { return r.Next != "" }) {
		rows[0].Next = ""
	}
	width, limits := tableFit(columns)
	for _, line := range term.FitLines(rows, limits, width, ReasonAtLeast) {
		fmt.Fprintln(w, line)
	}
}

// tableFit is the table's width on a terminal of columns (0: not a
// terminal), TableColumns at most, and its fixed columns' limits, each
// narrowed in step on a narrower terminal so that the reason keeps room.
func tableFit(columns int) (int, []int) {
	if columns <= 0 || columns >= TableColumns {
		return TableColumns, []int{PlaceColumn, StageColumn, StateColumn, ageColumn}
	}
	columns = max(columns, 48)
	return columns, []int{min(PlaceColumn, columns*3/10), min(StageColumn, columns/8), min(StateColumn, columns*3/20), ageColumn}
}
