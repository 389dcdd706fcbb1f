package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/stage/record"
)

// TestStatusLineOfAPlaceInManyConflictsFits: a place that conflicts with
// 199 others, each in five files, gets a line that names the first with
// three of its files, counts the rest and says where they are listed;
// it fits 200 columns (issue 46), where it took thousands.
func TestStatusLineOfAPlaceInManyConflictsFits(t *testing.T) {
	p := PlaceStatus{Place: "fix--p1", Branch: "fix/p1", Stage: StageStatus{Name: "code", Index: 1, Count: 2, State: "working"}, Ready: ReadyStatus{OK: true}, Worktree: "present"}
	for i := 2; i <= 200; i++ {
		p.Conflicts = append(p.Conflicts, record.Conflict{Place: "fix--p1", With: fmt.Sprintf("fix--p%d", i),
			Files: []string{"a.go", "b.go", "c.go", "d.go", "e.go"}, Exact: true})
	}
	var out bytes.Buffer
	if err := WriteStatusTable(&out, &Status{Places: []PlaceStatus{p}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	line := lines[len(lines)-1]
	if len(line) > 200 {
		t.Errorf("the line is %d characters:\n%s", len(line), line)
	}
	want := "conflicts with fix--p2 (a.go, b.go, c.go +2 files); and 198 more conflicts: git flume explain fix--p1"
	if !strings.HasSuffix(line, want) {
		t.Errorf("line\n%s\ndoes not end\n%s", line, want)
	}
}
