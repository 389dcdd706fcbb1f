package stage_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/stage"
)

// TestStatusGitCallsDoNotGrow_R4 counts the git processes status spawns for
// 1, 20 and 100 places: the count is the same.
func TestStatusGitCallsDoNotGrow_R4(t *testing.T) {
	if testing.Short() {
		t.Skip("launches 100 places")
	}
	counts := map[int]int{}
	for _, n := range []int{1, 20, 100} {
		f := newFixture(t)
		f.launch(n)
		env, log := f.countingGit()
		st, err := stage.ReadStatus(context.Background(), env, stage.StatusOptions{Repo: f.dir})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Places) != n {
			t.Fatalf("status lists %d places, want %d", len(st.Places), n)
		}
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		calls := strings.Fields(string(data))
		counts[n] = len(calls)
		t.Logf("%d places: %d git processes: %v", n, len(calls), calls)
	}
	if counts[1] != counts[20] || counts[20] != counts[100] {
		t.Fatalf("git processes per status: %v; want the same for every count", counts)
	}
}
