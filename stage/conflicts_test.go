package stage

import (
	"strings"
	"testing"
)

// TestLandOrderLandsTheIndependentFirst: a place that conflicts with its
// target lands last, a finished place before an unfinished one, fewer
// overlaps before more; places with nothing to land are left out.
func TestLandOrderLandsTheIndependentFirst(t *testing.T) {
	place := func(id string, toLand int, finished bool) openPlace {
		return openPlace{p: &Place{ID: id}, toLand: toLand, finished: finished}
	}
	places := []openPlace{place("a", 1, false), place("b", 1, true), place("c", 2, false), place("d", 1, true), place("e", 0, true)}
	conflicts := []Conflict{
		{Place: "a", With: "c", Files: []string{"x"}}, {Place: "c", With: "a", Files: []string{"x"}},
		{Place: "c", With: "d", Files: []string{"y", "z"}}, {Place: "d", With: "c", Files: []string{"y", "z"}},
		{Place: "b", With: "target main", Files: []string{"w"}},
	}
	var got []string
	for _, s := range landOrder(places, conflicts) {
		got = append(got, s.Place)
	}
	// d (finished, one overlap of 2 files) ties a (unfinished) on overlaps
	// but is finished; then a; then c (now conflicting with nothing left);
	// b last: it conflicts with its target.
	if strings.Join(got, " ") != "d a c b" {
		t.Fatalf("order %v, want d a c b", got)
	}
	steps := landOrder(places, conflicts)
	if !strings.Contains(steps[0].Why, "conflicts with c (y, z)") || !strings.Contains(steps[3].Why, "conflicts with its target main in w") {
		t.Fatalf("why: %q / %q", steps[0].Why, steps[3].Why)
	}
}
