package report

import (
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
