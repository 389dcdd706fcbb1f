package place_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
)

// TestAdoptedPlaceYieldsWithItsAgentGone_M5: a runner's place whose agent
// had already ended when the record adopting it arrived still yields: its
// stage is blocked (stopped), saying where its work goes on. The stop
// through the operator was refused (no agent up), the beat retried it for
// ever and the stage stayed working (runner_by_command…'s adopt step
// failed under load).
func TestAdoptedPlaceYieldsWithItsAgentGone_M5(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	env := f.stageEnv(f.env)
	remote := filepath.Join(t.TempDir(), "remote.git")
	f.git("init", "-q", "--bare", remote)
	f.git("-C", f.dir, "remote", "add", "origin", remote)
	if _, err := place.MakePlace(ctx, env, f.dir, place.LaunchOptions{Kind: "fix", Name: "far", Brief: "b"}); err != nil {
		t.Fatal(err)
	}
	var adopter record.Place
	editPlaceRecord(t, f, "fix--far", "its agent ended", func(p *record.Place) {
		now := time.Now()
		st := &p.Stages[0]
		st.State, st.Started, st.Runs = run.StateWorking, &now, 1
		st.Agent = &run.Agent{Program: "claude", Session: "s1", Pane: "%99", Host: "testhost", Started: now, Ended: true}
		adopter = *p
	})
	adopter.ID, adopter.Name, adopter.Branch, adopter.Host = "fix--far-2", "far-2", "fix/far-2", "otherhost"
	adopter.Path = strings.TrimSuffix(adopter.Path, "fix--far") + "fix--far-2"
	adopter.Adopts = &record.Adoption{Place: "fix--far", Host: "testhost", Work: f.git("-C", f.dir, "rev-parse", "HEAD"), Why: "lost its disk", At: time.Now(), By: "otherhost"}
	if _, err := fixtureStore(t, f).Write(ctx, []refs.Change{{Ref: record.PlaceRef("fix--far-2"), State: &adopter, Message: "adopt"}}); err != nil {
		t.Fatal(err)
	}

	if err := place.YieldToAdopter(ctx, env, f.dir, "fix--far", "origin"); err != nil {
		t.Fatalf("yield: %v", err)
	}
	_, p, err := record.ReadPlace(ctx, fixtureStore(t, f), "fix--far")
	if err != nil {
		t.Fatal(err)
	}
	st := p.Stages[0]
	if st.State != run.StateBlocked || st.Block != run.BlockStopped || !strings.Contains(st.Reason, "adopted as fix--far-2 on otherhost") {
		t.Fatalf("stage %s (%s): %q; want blocked (stopped), adopted as fix--far-2 on otherhost", st.State, st.Block, st.Reason)
	}
	if got := f.git("--git-dir", remote, "for-each-ref", "--format=%(refname)", "refs/flume/places/fix--far"); got == "" {
		t.Errorf("the yield was not shared: the remote has no record of fix--far")
	}
	// a second beat finds it yielded: nothing more to write
	before := f.git("-C", f.dir, "rev-parse", "refs/flume/places/fix--far")
	if err := place.YieldToAdopter(ctx, env, f.dir, "fix--far", "origin"); err != nil {
		t.Fatalf("second yield: %v", err)
	}
	if after := f.git("-C", f.dir, "rev-parse", "refs/flume/places/fix--far"); after != before {
		t.Errorf("a second yield moved the record")
	}
}

// TestAnyWatcherOfTheHostYieldsAnAdoptedPlace_M5: the beat of one
// runner's place yields another place of the host that was adopted, and
// starts a watcher for a third that has none: on a runner's host no
// command comes to start one, and the adopted place's own watcher may be
// gone (runner_by_command…'s adopt step failed on CI with the adopted
// place's agent up and no watcher of it left).
func TestAnyWatcherOfTheHostYieldsAnAdoptedPlace_M5(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	env := f.stageEnv(f.env)
	var started []string
	env.StartWatcher = func(_, id string) { started = append(started, id) }
	remote := filepath.Join(t.TempDir(), "remote.git")
	f.git("init", "-q", "--bare", remote)
	f.git("-C", f.dir, "remote", "add", "origin", remote)
	var adopter record.Place
	for _, name := range []string{"far", "near", "other"} {
		if _, err := place.MakePlace(ctx, env, f.dir, place.LaunchOptions{Kind: "fix", Name: name, Brief: "b"}); err != nil {
			t.Fatal(err)
		}
		// each on the runner, its second stage waiting for its agent
		// after a delivery: kept by a watcher, none alive
		editPlaceRecord(t, f, "fix--"+name, "on a runner", func(p *record.Place) {
			p.Runner, p.Current, p.Watcher = "cluster", 1, nil
			p.Stages[0].State = run.StateDelivered
			p.Stages[1].State = record.StagePending
			if name == "far" {
				adopter = *p
			}
		})
	}
	adopter.ID, adopter.Name, adopter.Branch = "fix--far-2", "far-2", "fix/far-2"
	adopter.Path = strings.TrimSuffix(adopter.Path, "fix--far") + "fix--far-2"
	adopter.Adopts = &record.Adoption{Place: "fix--far", Host: "testhost", Work: f.git("-C", f.dir, "rev-parse", "HEAD"), Why: "moving it", At: time.Now(), By: "testhost"}
	if _, err := fixtureStore(t, f).Write(ctx, []refs.Change{{Ref: record.PlaceRef("fix--far-2"), State: &adopter, Message: "adopt"}}); err != nil {
		t.Fatal(err)
	}

	if err := place.YieldToAdopter(ctx, env, f.dir, "fix--near", "origin"); err != nil {
		t.Fatalf("the beat of fix--near: %v", err)
	}
	_, p, err := record.ReadPlace(ctx, fixtureStore(t, f), "fix--far")
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Stages[1]; st.State != run.StateBlocked || st.Block != run.BlockStopped || !strings.Contains(st.Reason, "adopted as fix--far-2 on testhost") {
		t.Errorf("fix--far's stage %s (%s): %q; want blocked (stopped), adopted as fix--far-2 on testhost", st.State, st.Block, st.Reason)
	}
	_, near, err := record.ReadPlace(ctx, fixtureStore(t, f), "fix--near")
	if err != nil {
		t.Fatal(err)
	}
	if st := near.Stages[1]; st.State != record.StagePending {
		t.Errorf("fix--near, adopted by none, went %s", st.State)
	}
	if want := []string{"fix--far-2", "fix--other"}; !slices.Equal(started, want) {
		t.Errorf("watchers started for %q, want %q (the beating place has its own; the adopted one yields; the adopter, a place of this host, has none)", started, want)
	}
}
