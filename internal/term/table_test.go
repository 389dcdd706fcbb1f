package term

import (
	"strings"
	"testing"
)

// TestFitLinesKeepsTheNextStepAndCutsTheReason: lines never pass their
// width, counted in characters; the next step stays whole while the
// reason keeps its least room, else loses its explanation, else is cut.
func TestFitLinesKeepsTheNextStepAndCutsTheReason(t *testing.T) {
	rows := []Row{
		{Cols: []string{"fix--é", "code (1/2)"}, Reason: strings.Repeat("ü", 80), Next: "git flume retry fix--é"},
		{Cols: []string{"fix--b", "code (1/2)"}, Reason: "short", Next: "bring fix/b up to date with main (git -C '/a/very/long/path' merge main) and resolve f.txt"},
	}
	lines := FitLines(rows, []int{10, 12}, 70, 10)
	for _, l := range lines {
		if Width(l) > 70 {
			t.Errorf("%d columns: %s", Width(l), l)
		}
	}
	if !strings.HasSuffix(lines[0], "ü…  git flume retry fix--é") {
		t.Errorf("first line: %s", lines[0])
	}
	if !strings.HasSuffix(lines[1], "  bring fix/b up to date with main") || !strings.Contains(lines[1], "  short ") {
		t.Errorf("second line: %s", lines[1])
	}
	if got := ShortNext("git flume tell fix--a-very-long-name 'ANSWER'", 20); got != "git flume tell fix-…" || Width(got) != 20 {
		t.Errorf("cut: %q", got)
	}
}
