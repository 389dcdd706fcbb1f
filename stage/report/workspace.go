package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/git-flume/git-flume/internal/words"
	"github.com/git-flume/git-flume/promote"
	"github.com/git-flume/git-flume/promote/request"
)

// WriteWorkspace prints a status for people.
func WriteWorkspace(w io.Writer, st *promote.Status) {
	if st.Mode == request.ModeDirect {
		writeDirect(w, st)
		return
	}
	fmt.Fprintf(w, "request %s: %s\n", st.ID, st.Phase)
	if st.Worker != nil {
		state := "running"
		switch {
		case st.Worker.Ended:
			state = "ended"
		case !st.Worker.Confirmed:
			state = "prompt not confirmed yet"
		}
		fmt.Fprintf(w, "worker %s (session %s): %s\n", st.Worker.Program, st.Worker.Session, state)
	}
	for _, name := range slices.Sorted(maps.Keys(st.Members)) {
		m := st.Members[name]
		line := fmt.Sprintf("  %-12s %-10s %s %.12s", name, m.Phase, m.Branch, m.Base)
		if m.Tip != "" {
			line += fmt.Sprintf(" -> %.12s", m.Tip)
		}
		if m.Promotion != "" && m.Promotion != m.Phase {
			line += " [" + m.Promotion + "]"
		}
		if m.Reason != "" {
			line += ": " + m.Reason
		}
		if m.Manual != "" {
			line += ": " + m.Manual
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	for _, name := range st.Missing {
		fmt.Fprintf(w, "  %-12s no record: allocation interrupted\n", name)
	}
	for _, r := range append(append([]request.Result(nil), st.Checks...), st.FinalChecks...) {
		mark := "ok"
		if !r.OK() {
			mark = fmt.Sprintf("exit %d", r.Exit)
			if r.Refused != "" {
				mark += ", refused " + r.Refused
			}
		}
		fmt.Fprintf(w, "  check %s: %s: %s\n", r.Repository, request.Check{Command: r.Command, Args: r.Args}.Line(), mark)
	}
}

// writeDirect prints direct work: the request, its worker, what each
// ended task said, then each checkout's change report or stale-read
// warning.
func writeDirect(w io.Writer, st *promote.Status) {
	line := fmt.Sprintf("request %s (direct): %s", st.ID, st.Phase)
	if st.Phase == request.PhaseWorking {
		line += ", task " + st.Task
	}
	fmt.Fprintln(w, line)
	if wk := st.Worker; wk != nil && !wk.Ended {
		state := "running"
		if !wk.Confirmed {
			state = "prompt not confirmed yet"
		}
		fmt.Fprintf(w, "worker %s (session %s): %s\n", wk.Program, wk.Session, state)
	}
	writeTasks(w, st.Tasks)
	for _, name := range slices.Sorted(maps.Keys(st.Members)) {
		m := st.Members[name]
		head := fmt.Sprintf("  %-12s %-10s %s %.12s", name, m.Phase, m.Branch, m.Base)
		if m.Reserved {
			head += " [reserved]"
		}
		if m.Reason != "" {
			head += ": " + m.Reason
		}
		fmt.Fprintln(w, head)
		r := m.Report
		if r == nil {
			continue
		}
		switch {
		case r.Stale != "":
			fmt.Fprintf(w, "    stale read: %s\n", r.Stale)
		case r.To != r.From:
			fmt.Fprintf(w, "    %s %.12s -> %.12s: %d commits, %d files\n", r.Branch, r.From, r.To, len(r.Commits), len(r.Files))
			for _, c := range r.Commits {
				fmt.Fprintf(w, "      %s\n", c)
			}
			for _, f := range r.Files {
				fmt.Fprintf(w, "      %s\n", f)
			}
		default:
			fmt.Fprintf(w, "    %s unchanged at %.12s\n", r.Branch, r.From)
		}
		if r.Note != "" {
			fmt.Fprintf(w, "    note: %s\n", r.Note)
		}
		if len(r.Dirty) > 0 {
			fmt.Fprintf(w, "    uncommitted: %s\n", strings.Join(r.Dirty, ", "))
		}
		if len(r.DirtyBefore) > 0 {
			fmt.Fprintf(w, "    uncommitted before the request: %s\n", strings.Join(r.DirtyBefore, ", "))
		}
	}
	for _, name := range st.Missing {
		fmt.Fprintf(w, "  %-12s no record: allocation interrupted\n", name)
	}
}

// writeTasks prints what each ended task of direct work left, and how a
// text task wrote when it should only have read.
func writeTasks(w io.Writer, tasks []request.TaskResult) {
	for _, t := range tasks {
		fmt.Fprintf(w, "  task %s (%s): %s\n", t.ID, t.Kind, words.FirstLine(t.Answer))
		if len(t.Wrote) > 0 {
			fmt.Fprintf(w, "    WROTE though it only reads: %s\n", strings.Join(t.Wrote, "; "))
		}
	}
}
