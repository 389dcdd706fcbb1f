package promote_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-flume/git-flume/promote"
)

// BenchmarkPromote8 promotes a validated request of 8 repositories (its
// checks ran before: excluded) against the raw git moves in the same run:
// per repository `git update-ref -m … refs/heads/main TIP BASE` and
// `git read-tree -u -m BASE TIP` in its checkout ("ratio"), and the same
// with the `git status --porcelain` a careful person runs first
// ("ratio-careful"). Target ratio ≤ 1.5.
func BenchmarkPromote8(b *testing.B) {
	ctx := context.Background()
	r := newRequest(b, 8)
	if err := r.stage(nil); err != nil {
		b.Fatal(err)
	}
	if err := r.validate(nil); err != nil {
		b.Fatal(err)
	}
	st := r.status()
	saved := r.root + ".saved"
	if err := os.CopyFS(saved, os.DirFS(r.root)); err != nil {
		b.Fatal(err)
	}
	env := r.penv(nil)
	raw := func(careful bool) {
		for _, name := range r.names {
			dir := filepath.Join(r.root, name)
			m := st.Members[name]
			var steps [][]string
			if careful {
				steps = append(steps, []string{"status", "--porcelain", "--untracked-files=all"})
			}
			steps = append(steps, []string{"update-ref", "-m", "raw", "refs/heads/main", m.Tip, m.Base},
				[]string{"read-tree", "-u", "-m", m.Base, m.Tip})
			for _, args := range steps {
				cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
				cmd.Env = r.env
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%s: %v\n%s", args, err, out)
				}
			}
		}
	}
	var flume, moves, careful time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		r.restore(b, saved)
		b.StartTimer()
		t0 := time.Now()
		if _, err := promote.PromoteWorkspace(ctx, env, promote.RequestOptions{Root: r.root, ID: r.id, Expected: st.Tips}); err != nil {
			b.Fatal(err)
		}
		flume += time.Since(t0)
		b.StopTimer()
		if got := r.status(); got.Phase != promote.Promoted {
			b.Fatalf("phase %s", got.Phase)
		}
		r.restore(b, saved)
		b.StartTimer()
		t0 = time.Now()
		raw(false)
		moves += time.Since(t0)
		b.StopTimer()
		r.restore(b, saved)
		b.StartTimer()
		t0 = time.Now()
		raw(true)
		careful += time.Since(t0)
	}
	b.ReportMetric(float64(flume.Microseconds())/float64(b.N), "flume-µs/op")
	b.ReportMetric(float64(moves.Microseconds())/float64(b.N), "raw-µs/op")
	b.ReportMetric(float64(flume)/float64(moves), "ratio")
	b.ReportMetric(float64(flume)/float64(careful), "ratio-careful")
}
