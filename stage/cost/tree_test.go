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
	var got []string
	for _, r := range delegationTree(places, rows) {
		s := fmt.Sprintf("%s/%d@%d", r.Place, r.Run, r.Depth)
		if r.Children != nil {
			s += fmt.Sprintf(" +%g?%d", *r.Children, r.ChildrenUnpriced)
		}
		got = append(got, s)
	}
	want := "a--p/1@0 +2?1 | a--p/2@0 +0?0 | b--c/1@1 +0?1 | c--g/1@2 | b--r/1@1 | d--stray/1@0 | e--x/1@0 +64?0 | e--y/1@1 +32?0"
	if strings.Join(got, " | ") != want {
		t.Fatalf("rows\n got %s\nwant %s", strings.Join(got, " | "), want)
	}
}
