package place_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-flume/git-flume/stage/report"
)

// BenchmarkStatus200 reads the status of 200 places and encodes it as
// `status --json` does, against the raw floor in the same run:
// `git worktree list --porcelain` plus reading the records with
// `git for-each-ref` and `git cat-file --batch`. Target ratio ≤ 1.5. It
// runs on loose objects and refs, then after an explicit `git gc`: an
// in-process read that is fast on loose objects may not be once they are
// packed.
func BenchmarkStatus200(b *testing.B) {
	f := newFixture(b)
	f.git("-C", f.dir, "config", "gc.auto", "0")
	f.launch(200)
	b.Run("loose", func(b *testing.B) { benchStatus(b, f) })
	f.git("-C", f.dir, "gc", "-q")
	b.Run("packed", func(b *testing.B) { benchStatus(b, f) })
}

func benchStatus(b *testing.B, f *fixture) {
	env := f.stageEnv(f.env)
	ctx := context.Background()
	var flume, raw time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		st, err := report.ReadStatus(ctx, env, report.StatusOptions{Repo: f.dir})
		if err == nil {
			err = json.NewEncoder(io.Discard).Encode(st)
		}
		flume += time.Since(t0)
		if err != nil || len(st.Places) != 200 {
			b.Fatalf("status: %v", err)
		}
		t0 = time.Now()
		n := rawStatus(b, f)
		raw += time.Since(t0)
		if n != 200 {
			b.Fatalf("raw read %d records", n)
		}
	}
	b.ReportMetric(float64(flume.Microseconds())/float64(b.N), "flume-µs/op")
	b.ReportMetric(float64(raw.Microseconds())/float64(b.N), "raw-µs/op")
	b.ReportMetric(float64(flume)/float64(raw), "ratio")
}

func rawStatus(b *testing.B, f *fixture) int {
	run := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", f.dir}, args...)...)
		cmd.Env = f.env
		out, err := cmd.Output()
		if err != nil {
			b.Fatal(err)
		}
		return string(out)
	}
	run("worktree", "list", "--porcelain")
	ids := strings.Fields(run("for-each-ref", "--format=%(objectname)", "refs/flume/"))
	cat := exec.Command("git", "-C", f.dir, "cat-file", "--batch")
	cat.Env = f.env
	in, _ := cat.StdinPipe()
	out, _ := cat.StdoutPipe()
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
	rd := bufio.NewReader(out)
	n := 0
	for {
		header, err := rd.ReadString('\n')
		if err != nil {
			break
		}
		var id, typ string
		var size int
		fmt.Sscan(header, &id, &typ, &size)
		data := make([]byte, size+1)
		io.ReadFull(rd, data)
		var v map[string]any
		json.Unmarshal(data[:size], &v)
		n++
	}
	cat.Wait()
	return n
}

// BenchmarkCommitWithHook times `git commit` in a checkout that is not a
// place with git-flume's post-commit hook installed against one without
// it, in the same run (K7: outside a place the hook returns at once).
// Target ratio ≤ 1.25.
func BenchmarkCommitWithHook(b *testing.B) {
	with, without, empty := newFixture(b), newFixture(b), newFixture(b)
	if _, err := installHooksIn(context.Background(), with.stageEnv(with.env), with.dir); err != nil {
		b.Fatal(err)
	}
	// The floor: git starting any hook at all, one that only exits.
	if err := os.WriteFile(filepath.Join(empty.dir, ".git", "hooks", "post-commit"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	commit := func(f *fixture) time.Duration {
		cmd := exec.Command("git", "-C", f.dir, "commit", "-q", "--allow-empty", "-m", "x")
		cmd.Env = f.env
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		return time.Since(t0)
	}
	var hooked, plain, floor time.Duration
	b.ResetTimer()
	for range b.N {
		hooked += commit(with)
		plain += commit(without)
		floor += commit(empty)
	}
	b.ReportMetric(float64(hooked.Microseconds())/float64(b.N), "hook-µs/op")
	b.ReportMetric(float64(plain.Microseconds())/float64(b.N), "plain-µs/op")
	b.ReportMetric(float64(hooked)/float64(plain), "ratio")
	b.ReportMetric(float64(floor)/float64(plain), "empty-hook-ratio")
}

// BenchmarkCommitInPlace times `git commit` inside a place with
// git-flume's hooks installed (and git-flume on PATH, so the hook starts
// the place's advance) against a commit in a place of a repository without
// them, in the same run. The hook starts git-flume in the background from
// the hook script itself, so the commit does not wait for it. Target ratio
// ≤ 1.3.
func BenchmarkCommitInPlace(b *testing.B) {
	bin := b.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "git-flume"), "../cmd/git-flume")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build git-flume: %v\n%s", err, out)
	}
	with, without := newFixture(b), newFixture(b)
	for _, f := range []*fixture{with, without} {
		for i, kv := range f.env {
			if strings.HasPrefix(kv, "PATH=") {
				f.env[i] = "PATH=" + bin + ":" + strings.TrimPrefix(kv, "PATH=")
			}
		}
		f.env = append(f.env, "FLUME_PANE=none", "FLUME_HOST=testhost")
		f.launch(1)
	}
	if _, err := installHooksIn(context.Background(), with.stageEnv(with.env), with.dir); err != nil {
		b.Fatal(err)
	}
	commit := func(f *fixture) time.Duration {
		cmd := exec.Command("git", "-C", filepath.Join(f.dir, "places", "fix--p000"), "commit", "-q", "--allow-empty", "-m", "x")
		cmd.Env = f.env
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		return time.Since(t0)
	}
	var hooked, plain time.Duration
	b.ResetTimer()
	for range b.N {
		hooked += commit(with)
		plain += commit(without)
	}
	b.StopTimer()
	// The background advances this started end before the fixture goes.
	time.Sleep(500 * time.Millisecond)
	b.ReportMetric(float64(hooked.Microseconds())/float64(b.N), "hook-µs/op")
	b.ReportMetric(float64(plain.Microseconds())/float64(b.N), "plain-µs/op")
	b.ReportMetric(float64(hooked)/float64(plain), "ratio")
}
