package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/jsonfmt"
	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/stage/record"
)

// manyConflicts is a runnable place that conflicts with 199 others, each
// in five files, whose stage waits on a long question.
func manyConflicts() PlaceStatus {
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := PlaceStatus{Place: "fix--p1", Branch: "fix/p1", Stage: StageStatus{Name: "code", Index: 1, Count: 2, State: "waiting",
		Started: &started, ElapsedMs: 5 * 60 * 1000, Need: strings.Repeat("which of the two staging databases do I use? ", 4),
		Next: "git flume tell fix--p1 'ANSWER'"}, Ready: ReadyStatus{OK: true}, Worktree: "present",
		Run: &record.RunSetup{Ports: map[string]int{"DB_PORT": 41000, "PORT": 41001},
			Deps: &record.DepsSetup{Folders: []string{"node_modules"}, Method: "copy"}, Env: []record.EnvFile{{Path: ".env"}}}}
	for i := 2; i <= 200; i++ {
		p.Conflicts = append(p.Conflicts, record.Conflict{Place: "fix--p1", With: fmt.Sprintf("fix--p%d", i),
			Files: []string{"a.go", "b.go", "c.go", "d.go", "e.go"}, Exact: true})
	}
	return p
}

// TestStatusLineOfAPlaceInManyConflictsFits: by default the place's line
// fits 120 columns (issue 47) and still says what it waits on, the first
// conflict, how many more, and the next step whole; --wide keeps every
// note (its ports, the first conflict's files) and still fits 200 columns
// (issue 46), naming where the rest are listed.
func TestStatusLineOfAPlaceInManyConflictsFits(t *testing.T) {
	st := &Status{Places: []PlaceStatus{manyConflicts()}}
	var narrow, wide bytes.Buffer
	if err := WriteStatusTable(&narrow, st, false, 0); err != nil {
		t.Fatal(err)
	}
	if err := WriteStatusTable(&wide, st, true, 0); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(narrow.String(), "\n"), "\n")
	for _, line := range lines {
		if term.Width(line) > TableColumns {
			t.Errorf("the line is %d columns:\n%s", term.Width(line), line)
		}
	}
	if !strings.HasPrefix(lines[0], "PLACE  ") || !strings.Contains(lines[0], "REASON") || !strings.HasSuffix(lines[0], "NEXT") {
		t.Errorf("header: %s", lines[0])
	}
	for _, want := range []string{"fix--p1  ", "code (1/2)  ", "waiting  ", "5m  ", "needs: which of the two staging", "…  git flume tell fix--p1 'ANSWER'"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("line\n%s\ndoes not hold %q", lines[1], want)
		}
	}
	line := lastLine(wide.String())
	for _, want := range []string{"run: DB_PORT=41000, PORT=41001, node_modules by copy, .env copied",
		"conflicts with fix--p2 (a.go, b.go, c.go +2 files); and 198 more conflicts: git flume explain fix--p1", "next: git flume tell fix--p1 'ANSWER'"} {
		if !strings.Contains(line, want) {
			t.Errorf("wide line\n%s\ndoes not hold\n%s", line, want)
		}
	}
}

// TestStatusWideLineOfManyConflictsFits200: --wide names the first
// conflict with three of its files and counts the rest, so a working place
// in 199 conflicts fits 200 columns (issue 46), where it took thousands.
func TestStatusWideLineOfManyConflictsFits200(t *testing.T) {
	p := manyConflicts()
	p.Run, p.Stage.Need, p.Stage.Next, p.Stage.State = nil, "", "", "working"
	var wide bytes.Buffer
	if err := WriteStatusTable(&wide, &Status{Places: []PlaceStatus{p}}, true, 0); err != nil {
		t.Fatal(err)
	}
	line := lastLine(wide.String())
	if term.Width(line) > 200 {
		t.Errorf("the line is %d columns:\n%s", term.Width(line), line)
	}
	if want := "conflicts with fix--p2 (a.go, b.go, c.go +2 files); and 198 more conflicts: git flume explain fix--p1"; !strings.HasSuffix(line, want) {
		t.Errorf("line\n%s\ndoes not end\n%s", line, want)
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:]
}

// TestStatusReasonPutsConflictsBeforeRoutine: with nothing awaited, the
// narrow reason leads with the conflicts, counted, before the tasks.
func TestStatusReasonPutsConflictsBeforeRoutine(t *testing.T) {
	p := manyConflicts()
	p.Stage.Need, p.Stage.State, p.Stage.Next = "", "working", ""
	p.Stage.Tasks = &record.TaskCount{Done: 1, Total: 3}
	var out bytes.Buffer
	if err := WriteStatusTable(&out, &Status{Places: []PlaceStatus{p}}, false, 0); err != nil {
		t.Fatal(err)
	}
	if want := "conflicts with fix--p2 and 198 more; tasks 1/3"; !strings.Contains(out.String(), want) {
		t.Errorf("status\n%s\ndoes not hold %q", out.String(), want)
	}
	if strings.Contains(out.String(), "NEXT") {
		t.Errorf("a table with no next step has a NEXT column:\n%s", out.String())
	}
}

// TestStatusJSONStreamedAsWritten: status --json written a place at a
// time is, byte for byte, the document jsonfmt.Write lays out whole; with
// no place, no problem, one, or many (a nil problem list too).
func TestStatusJSONStreamedAsWritten(t *testing.T) {
	many := manyConflicts()
	for _, st := range []*Status{
		{Schema: 1, Places: []PlaceStatus{}, Problems: []StatusProblem{}},
		{Schema: 1, Places: []PlaceStatus{many}},
		{Schema: 1, Places: []PlaceStatus{many, {Place: "fix--two", Kind: "fix"}, {Place: "q--x"}}, Problems: []StatusProblem{{Ref: "refs/flume/places/x", Error: "bad <&> \x1b"}}},
	} {
		var whole, streamed bytes.Buffer
		if err := jsonfmt.Write(&whole, st); err != nil {
			t.Fatal(err)
		}
		if err := WriteStatusJSON(&streamed, st); err != nil {
			t.Fatal(err)
		}
		if whole.String() != streamed.String() {
			t.Errorf("streamed differs from whole:\n%s\n----\n%s", streamed.String(), whole.String())
		}
	}
}

// TestStatusKeepsTheLandersVerdictAfterAReminder (issue 61, point 9): a
// returned place whose agent was since reminded shows the lander's
// verdict with its reason ahead of the reminder on its narrow line.
func TestStatusKeepsTheLandersVerdictAfterAReminder(t *testing.T) {
	p := PlaceStatus{Place: "fix--one", Branch: "fix/one", Ready: ReadyStatus{OK: true}, Worktree: "present",
		Stage: StageStatus{Name: "submit", Index: 2, Count: 2, State: "working",
			Reason: "its turn ended at 10:00:00 with neither the deliverable nor NEEDS:; sent the one reminder"},
		Land: &LandStatus{State: "returned", Reason: `check "make test" exited 1 on its merge onto main at 0123456789ab`}}
	var narrow bytes.Buffer
	if err := WriteStatusTable(&narrow, &Status{Places: []PlaceStatus{p}}, false, 0); err != nil {
		t.Fatal(err)
	}
	line := lastLine(narrow.String())
	i, j := strings.Index(line, `land: returned: check "make test" exited 1`), strings.Index(line, "its turn ended")
	if i < 0 || j >= 0 && j < i {
		t.Errorf("the line does not lead with the lander's verdict:\n%s", line)
	}
}

// TestStatusFitsAnEightyColumnTerminal (issue 61, point 9): on a terminal
// narrower than TableColumns, every line fits it, and each place's line
// still names it, its stage and its state.
func TestStatusFitsAnEightyColumnTerminal(t *testing.T) {
	st := &Status{Places: []PlaceStatus{manyConflicts()}}
	for _, columns := range []int{80, 100} {
		var out bytes.Buffer
		if err := WriteStatusTable(&out, st, false, columns); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		for _, line := range lines {
			if term.Width(line) > columns {
				t.Errorf("at %d columns a line is %d:\n%s", columns, term.Width(line), line)
			}
		}
		for _, want := range []string{"fix--p1  ", "code (1/2)", "waiting  ", "needs: which"} {
			if !strings.Contains(lines[1], want) {
				t.Errorf("at %d columns the line\n%s\ndoes not hold %q", columns, lines[1], want)
			}
		}
	}
}
