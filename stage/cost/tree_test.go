package cost

import (
	"fmt"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/stage/record"
)

// TestDelegationTreeSumsFinishedChildren_W6: rows follow the places' tree
// (each place's rows, then its children's, one deeper); a run that
// delegated carries its finished descendants' known cost and counts the
// unpriced ones; a running child adds nothing; a child whose record does
// not name its commissioner back stays at the top; a crafted cycle is
// shown once.
func TestDelegationTreeSumsFinishedChildren_W6(t *testing.T) {
	dollars := func(f float64) *float64 { return &f }
	child := func(id, parent string, stageIdx, run int) *record.Place {
		return &record.Place{ID: id, Parent: &record.Delegation{Parent: parent, Stage: stageIdx, Run: run}}
	}
	places := []*record.Place{
		{ID: "a--p", Children: []string{"b--c", "b--r"}},
		child("b--c", "a--p", 0, 1),
		child("b--r", "a--p", 0, 2),
		child("c--g", "b--c", 0, 1),
		child("d--stray", "a--p", 0, 1), // a--p does not name it
		child("e--x", "e--y", 0, 1),
		child("e--y", "e--x", 0, 1),
	}
	places[1].Children = []string{"c--g"}
	places[5].Children, places[6].Children = []string{"e--y"}, []string{"e--x"}
	rows := []Row{
		{Place: "a--p", Run: 1, Outcome: RunFinished, Cost: dollars(1)},
		{Place: "a--p", Run: 2, Outcome: RunFinished, Cost: dollars(1)},
		{Place: "b--c", Run: 1, Outcome: RunFinished, Cost: dollars(2)},
		{Place: "c--g", Run: 1, Outcome: RunFinished},                  // unpriced
		{Place: "b--r", Run: 1, Outcome: RunRunning, Cost: dollars(8)}, // not finished
		{Place: "d--stray", Run: 1, Outcome: RunFinished, Cost: dollars(16)},
		{Place: "e--x", Run: 1, Outcome: RunFinished, Cost: dollars(32)},
		{Place: "e--y", Run: 1, Outcome: RunFinished, Cost: dollars(64)},
	}
	got := treeRows(places, rows)
	want := "a--p/1@0 +2?1 | a--p/2@0 +0?0 | b--c/1@1 +0?1 | c--g/1@2 | b--r/1@1 | d--stray/1@0 | e--x/1@0 +64?0 | e--y/1@1 +32?0"
	if got != want {
		t.Fatalf("rows\n got %s\nwant %s", got, want)
	}
}

// TestAcceptedChildCountsEverySessionItEnded_W6: a child whose work its
// commissioner accepted adds every session it ended, delivered or not,
// to the run that delegated it (issue 47: its runs were lost and the
// run showed + $0.0000); a rolled-back child's add nothing, nor a
// session still running.
func TestAcceptedChildCountsEverySessionItEnded_W6(t *testing.T) {
	dollars := func(f float64) *float64 { return &f }
	child := func(id, outcome string) *record.Place {
		return &record.Place{ID: id, Parent: &record.Delegation{Parent: "a--p", Stage: 0, Run: 1, Outcome: outcome}}
	}
	places := []*record.Place{{ID: "a--p", Children: []string{"b--ok", "b--back"}}, child("b--ok", record.OutcomeAccepted), child("b--back", record.OutcomeRolledBack)}
	rows := []Row{
		{Place: "a--p", Run: 1, Outcome: RunFinished, Cost: dollars(1)},
		{Place: "b--ok", Run: 1, Outcome: RunAborted, Cost: dollars(2)},
		{Place: "b--ok", Run: 2, Outcome: RunAborted, Cost: dollars(4)},
		{Place: "b--ok", Run: 3, Outcome: RunRunning, Cost: dollars(8)},
		{Place: "b--back", Run: 1, Outcome: RunRolledBack, Cost: dollars(16)},
	}
	if got, want := treeRows(places, rows), "a--p/1@0 +6?0 | b--ok/1@1 | b--ok/2@1 | b--ok/3@1 | b--back/1@1"; got != want {
		t.Fatalf("rows\n got %s\nwant %s", got, want)
	}
}

// treeRows is delegationTree's rows as place/run@depth, with what each
// run that delegated carries.
func treeRows(places []*record.Place, rows []Row) string {
	var got []string
	for _, r := range delegationTree(places, rows) {
		s := fmt.Sprintf("%s/%d@%d", r.Place, r.Run, r.Depth)
		if r.Children != nil {
			s += fmt.Sprintf(" +%g?%d", *r.Children, r.ChildrenUnpriced)
		}
		got = append(got, s)
	}
	return strings.Join(got, " | ")
}
