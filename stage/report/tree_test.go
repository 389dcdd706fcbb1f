package report

import (
	"slices"
	"strings"
	"testing"
)

// TestTreeOrderPutsChildrenUnderTheirCommissioner: status's tree, with a
// child whose commissioner is not shown at the top, and a crafted cycle
// shown once each.
func TestTreeOrderPutsChildrenUnderTheirCommissioner(t *testing.T) {
	got := treeOrder([]PlaceStatus{
		{Place: "a--c", Parent: "a--p"},
		{Place: "a--p", Children: []string{"a--c"}},
		{Place: "b--orphan", Parent: "z--gone"},
		{Place: "c--x", Parent: "c--y", Children: []string{"c--y"}},
		{Place: "c--y", Parent: "c--x", Children: []string{"c--x"}},
	})
	var order []string
	for _, p := range got {
		order = append(order, p.Place+":"+string(rune('0'+p.Depth)))
	}
	if want := "a--p:0 a--c:1 b--orphan:0 c--x:0 c--y:1"; strings.Join(order, " ") != want {
		t.Fatalf("order %v, want %s", order, want)
	}
}

// TestPermuteMovesWithinTheSlice: every permutation of five, against a
// copy made the plain way.
func TestPermuteMovesWithinTheSlice(t *testing.T) {
	var each func(order []int, rest []int)
	each = func(order []int, rest []int) {
		if len(rest) == 0 {
			s := []string{"a", "b", "c", "d", "e"}
			want := make([]string, len(s))
			for k, i := range order {
				want[k] = s[i]
			}
			permute(s, slices.Clone(order))
			if !slices.Equal(s, want) {
				t.Fatalf("permute by %v: %v, want %v", order, s, want)
			}
			return
		}
		for i, r := range rest {
			each(append(slices.Clone(order), r), append(slices.Clone(rest[:i]), rest[i+1:]...))
		}
	}
	each(nil, []int{0, 1, 2, 3, 4})
}
