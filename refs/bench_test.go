package refs_test

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
)

// Each benchmark times git-flume and the raw git floor for the same work in
// the same run, interleaved, and reports both and their ratio.
func report(b *testing.B, flume, raw time.Duration) {
	b.ReportMetric(float64(flume.Microseconds())/float64(b.N), "flume-µs/op")
	b.ReportMetric(float64(raw.Microseconds())/float64(b.N), "raw-µs/op")
	b.ReportMetric(float64(flume)/float64(raw), "ratio")
}

// BenchmarkReadAll1000 reads 1,000 records through the store (R4) against
// the floor: `git for-each-ref` + `git cat-file --batch` over the same refs.
// Target ratio ≤ 1.5. It runs on loose objects and refs, then after an
// explicit `git gc`. Each iteration opens the repository anew
// (timed), so nothing read in one is kept for the next, as in a command.
func BenchmarkReadAll1000(b *testing.B) {
	ctx := context.Background()
	r := newTestRepo(b)
	r.git("-C", r.dir, "config", "gc.auto", "0")
	changes := make([]refs.Change, 1000)
	for i := range changes {
		changes[i] = refs.Change{Ref: fmt.Sprintf("refs/flume/counters/c%04d", i), State: counter{Schema: 1, Kind: "counter", N: i}}
	}
	if _, err := r.store().Write(ctx, changes); err != nil {
		b.Fatal(err)
	}
	b.Run("loose", func(b *testing.B) { benchReadAll(b, r) })
	r.git("-C", r.dir, "gc", "-q")
	b.Run("packed", func(b *testing.B) { benchReadAll(b, r) })
}

func benchReadAll(b *testing.B, r *testRepo) {
	ctx := context.Background()
	var flume, raw time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		repo, err := (&git.Runner{Env: r.env}).Open(ctx, r.dir)
		if err != nil {
			b.Fatal(err)
		}
		s := refs.New(repo, testKinds)
		recs, problems, err := s.List(ctx, refs.Prefix)
		flume += time.Since(t0)
		if err != nil || len(recs) != 1000 || len(problems) != 0 {
			b.Fatalf("list: %d records, %v, %v", len(recs), problems, err)
		}
		t0 = time.Now()
		n := rawReadAll(b, r)
		raw += time.Since(t0)
		if n != 1000 {
			b.Fatalf("raw read %d", n)
		}
	}
	report(b, flume, raw)
}

func rawReadAll(b *testing.B, r *testRepo) int {
	list := exec.Command("git", "-C", r.dir, "for-each-ref", "--format=%(objectname)", "refs/flume/")
	list.Env = r.env
	out, err := list.Output()
	if err != nil {
		b.Fatal(err)
	}
	ids := strings.Fields(string(out))
	cat := exec.Command("git", "-C", r.dir, "cat-file", "--batch")
	cat.Env = r.env
	in, _ := cat.StdinPipe()
	stdout, _ := cat.StdoutPipe()
	if err := cat.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		w := bufio.NewWriter(in)
		for _, id := range ids {
			w.WriteString(id + ":state.json\n")
		}
		w.Flush()
		in.Close()
	}()
	rd := bufio.NewReader(stdout)
	n := 0
	for {
		header, err := rd.ReadString('\n')
		if err != nil {
			break
		}
		var id, typ string
		var size int
		fmt.Sscan(header, &id, &typ, &size)
		rd.Discard(size + 1)
		n++
	}
	cat.Wait()
	return n
}

// BenchmarkCASUpdate moves one record by compare-and-swap through the store
// (state commit built in process, one `git update-ref -z --stdin`) against
// the floor: `git update-ref <ref> <new> <old>` with ready-made commits.
// Target ratio ≤ 1.3.
func BenchmarkCASUpdate(b *testing.B) {
	ctx := context.Background()
	r := newTestRepo(b)
	s := r.store()
	const ref = "refs/flume/counters/bench"
	w, err := s.Write(ctx, []refs.Change{{Ref: ref, State: counter{Schema: 1, Kind: "counter"}}})
	if err != nil {
		b.Fatal(err)
	}
	cur := w[0]
	x := r.git("-C", r.dir, "rev-parse", "HEAD")
	y := r.git("-C", r.dir, "commit-tree", "-p", x, "-m", "y", "HEAD^{tree}")
	r.git("-C", r.dir, "update-ref", "refs/flume/raw", x)
	old, next := x, y
	var flume, raw time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		w, err := s.Write(ctx, []refs.Change{{Ref: ref, Old: cur, State: counter{Schema: 1, Kind: "counter", N: i + 1}}})
		flume += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		cur = w[0]
		t0 = time.Now()
		cmd := exec.Command("git", "-C", r.dir, "update-ref", "refs/flume/raw", next, old)
		cmd.Env = r.env
		err = cmd.Run()
		raw += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		old, next = next, old
	}
	report(b, flume, raw)
}
