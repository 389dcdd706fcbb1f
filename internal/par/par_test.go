package par_test

import (
	"sync/atomic"
	"testing"

	"github.com/git-flume/git-flume/internal/par"
)

// TestEachRunsEveryStepOnce: whatever the count, on one goroutine or
// several, every index runs exactly once; one failing step makes Each
// report false.
func TestEachRunsEveryStepOnce(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 33, 1000} {
		seen := make([]atomic.Int32, n)
		if !par.Each(n, func(i int) bool { seen[i].Add(1); return true }) {
			t.Fatalf("n=%d: reported a failure", n)
		}
		for i := range seen {
			if c := seen[i].Load(); c != 1 {
				t.Fatalf("n=%d: step %d ran %d times", n, i, c)
			}
		}
		if n > 0 && par.Each(n, func(i int) bool { return i != n-1 }) {
			t.Fatalf("n=%d: the last step failed, Each said all did", n)
		}
	}
}
