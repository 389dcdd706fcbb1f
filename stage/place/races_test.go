package place_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/internal/lockfile"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/radar"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/report"
)

// TestTidyRecordsOverARecordMovedMeanwhile (T1): a place's record
// moved by another process after tidy judged it and removed its worktree
// and branch (a watcher, a hook's advance, the radar taking a fingerprint)
// is read again and the tidy recorded over it; tidy does not fail.
func TestTidyRecordsOverARecordMovedMeanwhile(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.launch(1)
	f.git("-C", f.dir+"/places/fix--p000", "commit", "-q", "--allow-empty", "-m", "the fix")
	f.git("-C", f.dir, "merge", "-q", "--ff-only", "fix/p000")
	env := f.stageEnv(f.env)
	moved := false
	env.Fault = func(point string) {
		if point != "tidy:removed" || moved {
			return
		}
		moved = true
		store, rec := readPlaceRecord(t, f, "fix--p000")
		// Another process's write: the same state, a new commit.
		if _, err := store.Write(ctx, []refs.Change{{Ref: rec.Ref, Old: rec, State: json.RawMessage(rec.Data), Message: "meanwhile"}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := tidyIn(ctx, env, f.dir)
	if err != nil {
		t.Fatalf("tidy failed over a record moved meanwhile: %v", err)
	}
	if !moved || len(res) != 1 || !res[0].Tidied {
		t.Fatalf("moved %v, results %+v", moved, res)
	}
	log := f.git("-C", f.dir, "log", "--format=%s", "refs/flume/places/fix--p000")
	if !strings.HasPrefix(log, "tidy fix--p000: landed") || !strings.Contains(log, "meanwhile") {
		t.Errorf("the record's history:\n%s", log)
	}
}

// TestTidyKeepsItsNoteOverARecordMovedMeanwhile_T2: the note of why tidy
// kept a place is written over a record that moved between tidy's read
// and its write (a watcher giving up its lease as a runner's place
// yields). It was given up: on a runner's host no later tidy comes, and
// runner_by_command…'s last step waited for it in vain under load.
func TestTidyKeepsItsNoteOverARecordMovedMeanwhile_T2(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.launch(1)
	f.git("-C", f.dir+"/places/fix--p000", "commit", "-q", "--allow-empty", "-m", "unlanded")
	env := f.stageEnv(f.env)
	if _, err := dropIn(ctx, env, f.dir, stage.PlaceOptions{Repo: f.dir, Place: "fix--p000"}); err != nil {
		t.Fatal(err)
	}
	moved := 0
	env.Fault = func(point string) {
		if point != "tidy:keep" || moved > 0 {
			return
		}
		moved++
		store, rec := readPlaceRecord(t, f, "fix--p000")
		if _, err := store.Write(ctx, []refs.Change{{Ref: rec.Ref, Old: rec, State: json.RawMessage(rec.Data), Message: "unwatch"}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := tidyIn(ctx, env, f.dir)
	if err != nil {
		t.Fatalf("tidy: %v", err)
	}
	if moved == 0 || len(res) != 1 || res[0].Kept == "" {
		t.Fatalf("moved %d times, results %+v", moved, res)
	}
	_, p, err := record.ReadPlace(ctx, fixtureStore(t, f), "fix--p000")
	if err != nil {
		t.Fatal(err)
	}
	if p.Kept != res[0].Kept {
		t.Errorf("the record's kept note: %q, want tidy's %q", p.Kept, res[0].Kept)
	}
}

// TestStatusShowsAnInterruptedReadyingTheEngineRecords_L2: a readying whose
// process died is shown interrupted by status, which records nothing (a
// read never writes; a ref lock a killed git left, which would refuse a
// write, does not trouble it); the engine's next step records it.
func TestStatusShowsAnInterruptedReadyingTheEngineRecords_L2(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.launch(1)
	store, rec := readPlaceRecord(t, f, "fix--p000")
	var p map[string]any
	if err := json.Unmarshal(rec.Data, &p); err != nil {
		t.Fatal(err)
	}
	p["ready"] = map[string]any{"ok": false, "steps": 1, "running": map[string]any{"pid": 999999, "host": "testhost"}}
	if _, err := store.Write(ctx, []refs.Change{{Ref: rec.Ref, Old: rec, State: p, Message: "ready fix--p000: running"}}); err != nil {
		t.Fatal(err)
	}
	_, running := readPlaceRecord(t, f, "fix--p000")
	lock := filepath.Join(f.dir, ".git", "refs", "flume", "places", "fix--p000.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := f.stageEnv(f.env)
	st, err := report.ReadStatus(ctx, env, report.StatusOptions{Repo: f.dir})
	if err != nil {
		t.Fatalf("status failed on a lock a killed git left: %v", err)
	}
	if len(st.Places) != 1 || len(st.Problems) != 0 || st.Places[0].Ready.Step != "(interrupted)" || st.Places[0].Ready.Running {
		t.Fatalf("status: places %d, problems %+v, ready %+v", len(st.Places), st.Problems, st.Places[0].Ready)
	}
	if _, after := readPlaceRecord(t, f, "fix--p000"); after.Commit != running.Commit {
		t.Fatal("status wrote the place's record")
	}
	os.Remove(lock)
	env.Engine.NoStart = true // the engine's step that records it, and no agent
	r, err := env.OpenRepository(ctx, f.dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Advance(ctx, r, "fix--p000"); err != nil {
		t.Fatal(err)
	}
	_, after := readPlaceRecord(t, f, "fix--p000")
	var q struct {
		Ready struct {
			Step    string `json:"step"`
			Running any    `json:"running"`
		} `json:"ready"`
	}
	if err := json.Unmarshal(after.Data, &q); err != nil || q.Ready.Step != "(interrupted)" || q.Ready.Running != nil {
		t.Fatalf("the engine's record: %s (%v)", after.Data, err)
	}
}

// TestRefreshMergesOnlyThePlacesPairs: a commit in one place
// merges that place's pairs (its target and each other open place), not
// every pair of places, even with nothing cached: at 1,000 places a cold
// cache would otherwise cost half a million merges in a hook.
func TestRefreshMergesOnlyThePlacesPairs(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.launch(4)
	for i := range 4 {
		f.commitIn(i, fmt.Sprintf("f%d.txt", i), "x\n")
	}
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "calls")
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %q\nexec %q \"$@\"\n", log, real)
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := f.stageEnv(f.env)
	env.Runner.Path = filepath.Join(bin, "git")
	if _, err := radar.RefreshConflicts(ctx, env, f.dir, "fix--p000"); err != nil {
		t.Fatal(err)
	}
	calls, _ := os.ReadFile(log)
	// Its target, and the three other places: four merges, not ten.
	if n := strings.Count(string(calls), "merge-tree"); n != 4 {
		t.Errorf("%d merges for one place's commit among four places, want 4:\n%s", n, calls)
	}
}

// readPlaceRecord reads place id's record as another process would, with
// a store of its own.
func readPlaceRecord(t *testing.T, f *fixture, id string) (*refs.Store, *refs.Record) {
	t.Helper()
	store := fixtureStore(t, f)
	rec, err := store.Read(context.Background(), record.PlaceRef(id))
	if err != nil {
		t.Fatal(err)
	}
	return store, rec
}

// TestHookRefreshesQueueBehindTheRefreshers: a commit's refresh, with every
// refresher of the repository busy, queues its place and ends without
// merging; the next refresh that gets a refresher's lock takes what is
// queued as well as its own, each place once (issue 46: two hundred
// commits started two hundred refreshes side by side).
func TestHookRefreshesQueueBehindTheRefreshers(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.launch(2)
	for i := range 2 {
		f.commitIn(i, "same.txt", fmt.Sprintf("place %d\n", i))
	}
	env, log := f.countingGit()
	queue := filepath.Join(f.dir, ".git", "flume", "cache", "refresh")
	if err := os.MkdirAll(queue, 0o755); err != nil {
		t.Fatal(err)
	}
	var held []*lockfile.Lock
	for i := range 4 { // every refresher a machine of up to four cores has
		lock, err := lockfile.TryTake(filepath.Join(queue, ".lock-"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, lock)
	}
	if err := radar.RefreshQueued(ctx, env, f.dir, "fix--p000"); err != nil {
		t.Fatal(err)
	}
	if calls, _ := os.ReadFile(log); strings.Contains(string(calls), "merge-tree") {
		t.Fatalf("refreshed with every refresher busy:\n%s", calls)
	}
	if _, err := os.Stat(filepath.Join(queue, "fix--p000")); err != nil {
		t.Fatalf("the place is not queued: %v", err)
	}
	for _, l := range held {
		l.Unlock()
	}
	if err := radar.RefreshQueued(ctx, env, f.dir, "fix--p001"); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(queue, "fix--*")); len(left) > 0 {
		t.Fatalf("still queued: %q", left)
	}
	// p000 with its target and p001, p001 with its target: the pair of
	// the two merged once.
	if calls, _ := os.ReadFile(log); strings.Count(string(calls), "merge-tree") != 3 {
		t.Fatalf("merges:\n%s", calls)
	}
	store := fixtureStore(t, f)
	records, _, err := store.List(ctx, record.PlacePrefix)
	if err != nil {
		t.Fatal(err)
	}
	got := radar.KnownConflicts(env, store.Repo(), radar.Views(record.DecodePlaces(records)))
	if len(got["fix--p000"]) != 1 || len(got["fix--p001"]) != 1 {
		t.Fatalf("known conflicts after the queue ran: %v", got)
	}
}

// commitIn commits file, holding text, in the fixture's place number i.
func (f *fixture) commitIn(i int, file, text string) {
	f.t.Helper()
	dir := filepath.Join(f.dir, "places", fmt.Sprintf("fix--p%03d", i))
	if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
		f.t.Fatal(err)
	}
	f.git("-C", dir, "add", ".")
	f.git("-C", dir, "commit", "-q", "-m", "work")
}

// TestTidyKeepsABranchMovedAfterItWasJudged_T4: a branch that moves after
// tidy judged its head landed (an agent's last commit, a person's push)
// is kept, named, with the new commit on it: the delete is a
// compare-and-swap on the head judged, never on the branch's value then.
func TestTidyKeepsABranchMovedAfterItWasJudged_T4(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.launch(1)
	f.git("-C", f.dir+"/places/fix--p000", "commit", "-q", "--allow-empty", "-m", "the fix")
	f.git("-C", f.dir, "merge", "-q", "--ff-only", "fix/p000")
	env := f.stageEnv(f.env)
	var late string
	env.Fault = func(point string) {
		if point != "tidy:branch" || late != "" {
			return
		}
		tree := f.git("-C", f.dir, "rev-parse", "fix/p000^{tree}")
		late = f.git("-C", f.dir, "commit-tree", "-p", "fix/p000", "-m", "late work", tree)
		f.git("-C", f.dir, "update-ref", "refs/heads/fix/p000", late)
	}
	res, err := tidyIn(ctx, env, f.dir)
	if err != nil {
		t.Fatal(err)
	}
	if late == "" || len(res) != 1 || res[0].Branch != "kept" || res[0].Kept != "branch fix/p000 moved while it was judged" {
		t.Fatalf("moved to %q; results %+v", late, res)
	}
	if head := f.git("-C", f.dir, "rev-parse", "--verify", "-q", "refs/heads/fix/p000"); head != late {
		t.Errorf("the branch is at %q, want the late work %s", head, late)
	}
}
