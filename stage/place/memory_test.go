package place

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
)

// Decisions of the places' workflows on records in memory: no git is
// started (the scripts and the tests beside this one run them whole).

var memAt = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func memPlace(kind, name, target string) *record.Place {
	id := kind + "--" + name
	return &record.Place{Schema: 1, Kind: "place", ID: id, PlaceKind: kind, Name: name, Repo: "/r", Path: "/r/places/" + id,
		Branch: kind + "/" + name, Base: strings.Repeat("1", 40), Target: target, Brief: "b", Host: "h", Created: memAt,
		Phase: record.PhaseMade, Stages: []record.StageRecord{{Name: "code", Prompt: "code", Deliverable: stage.DeliverCommit, Runs: 1}}}
}

// TestTidyRemovesOnlyWhatLandedOrWasDropped_T1: tidy's reason to remove a
// place is its landing or its drop, and nothing else: not a place whose
// landing cannot be told, nor one a rollback under way is restoring.
func TestTidyRemovesOnlyWhatLandedOrWasDropped_T1(t *testing.T) {
	dropped := func(p *record.Place) { p.Dropped = &memAt }
	restoring := func(p *record.Place) {
		p.Parent = &record.Delegation{Parent: "change--lead", Outcome: record.OutcomeRolledBack}
		p.Dropped = &memAt
	}
	restored := func(p *record.Place) { restoring(p); p.Parent.Restored = true }
	for _, c := range []struct {
		name  string
		edit  func(*record.Place)
		judge engine.LandingJudgement
		want  string
	}{
		{name: "working", want: ""},
		{name: "unlanded commits", judge: engine.LandingJudgement{Unlanded: 2}, want: ""},
		{name: "target missing", judge: engine.LandingJudgement{Unknown: true}, want: ""},
		{name: "landed", judge: engine.LandingJudgement{Landed: true}, want: "landed"},
		{name: "dropped", edit: dropped, judge: engine.LandingJudgement{Unlanded: 3}, want: "dropped"},
		{name: "rollback restoring", edit: restoring, want: ""},
		{name: "rollback restored", edit: restored, want: "dropped"},
	} {
		p := memPlace("fix", "one", "main")
		if c.edit != nil {
			c.edit(p)
		}
		if got := tidyReason(p, c.judge); got != c.want {
			t.Errorf("%s: tidy reason %q, want %q", c.name, got, c.want)
		}
	}
}

// TestOpenChildIsTheNewestOpenDelegation_A9: a commissioner's open child
// is its newest delegated place still open; a child closed, or one whose
// record is gone, is passed over.
func TestOpenChildIsTheNewestOpenDelegation_A9(t *testing.T) {
	ctx := context.Background()
	store := refs.NewMemory(refs.Kinds{record.PlaceKind})
	lead := memPlace("change", "lead", "main")
	lead.Children = []string{"fix--a", "fix--b", "fix--gone"}
	var changes []refs.Change
	for _, name := range []string{"a", "b"} {
		c := memPlace("fix", name, "change/lead")
		c.Parent = &record.Delegation{Parent: lead.ID, Run: 1, At: memAt}
		changes = append(changes, record.PlaceChange(nil, c, "launch"))
	}
	changes = append(changes, record.PlaceChange(nil, lead, "launch"))
	if _, err := store.Write(ctx, changes); err != nil {
		t.Fatal(err)
	}
	if open, err := OpenChild(ctx, store, lead); err != nil || open != "fix--b" {
		t.Fatalf("open child %q (%v), want the newest open one, fix--b", open, err)
	}
	if _, err := record.EditPlace(ctx, store, "fix--b", func(cur *record.Place) (string, error) {
		cur.Parent.Outcome, cur.Parent.Closed = record.OutcomeAccepted, &memAt
		cur.Stages[0].State = agentrun.StateDelivered
		return "accept", nil
	}); err != nil {
		t.Fatal(err)
	}
	if open, err := OpenChild(ctx, store, lead); err != nil || open != "fix--a" {
		t.Fatalf("open child %q (%v) after fix--b was accepted, want fix--a", open, err)
	}
}

// fakeWorktrees are a repository's worktrees and branches as tidy sees
// them, in memory: what each place's branch judges as, which worktrees are
// dirty or had their git files changed; it logs what it removes.
type fakeWorktrees struct {
	wts     []git.Worktree
	judged  map[string]engine.LandingJudgement
	dirty   map[string][]string
	changed map[string]string
	did     []string
}

func (w *fakeWorktrees) Lock(context.Context) (func(), error) { return func() {}, nil }
func (w *fakeWorktrees) List(context.Context, []*refs.Record) ([]git.Worktree, error) {
	return w.wts, nil
}
func (w *fakeWorktrees) CheckHome(context.Context, *record.Place) error { return nil }
func (w *fakeWorktrees) JudgeLanding(_ context.Context, p *record.Place) (engine.LandingJudgement, error) {
	return w.judged[p.ID], nil
}
func (w *fakeWorktrees) Changed(path string) string { return w.changed[path] }
func (w *fakeWorktrees) Dirty(_ context.Context, path string) ([]string, error) {
	return w.dirty[path], nil
}
func (w *fakeWorktrees) Remove(_ context.Context, path string) error {
	w.did = append(w.did, "remove "+filepath.Base(path))
	return nil
}
func (w *fakeWorktrees) RemoveWithSteps(_ context.Context, p *record.Place) (string, error) {
	w.did = append(w.did, "remove "+p.ID)
	return "", nil
}
func (w *fakeWorktrees) DeleteBranch(_ context.Context, ref, old string) error {
	w.did = append(w.did, "delete "+ref+" at "+old[:4])
	return nil
}

// TestTidyJudgesEachPlaceOnItsOwn_T1_T2_T3_T4: on records in memory, tidy
// removes a landed place's clean worktree and deletes its branch at the
// head it judged, recording the place tidied; a dropped place with
// unlanded commits loses its worktree but keeps its branch; a dirty
// worktree, one whose git files were changed, and one another live
// session claims are kept, each saying why; a working place is left alone.
func TestTidyJudgesEachPlaceOnItsOwn_T1_T2_T3_T4(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	store := refs.NewMemory(refs.Kinds{record.PlaceKind, refs.ClaimKind})
	head := strings.Repeat("2", 40)
	w := &fakeWorktrees{judged: map[string]engine.LandingJudgement{}, dirty: map[string][]string{}, changed: map[string]string{}}
	var changes []refs.Change
	for _, c := range []struct {
		name    string
		dropped bool
		judge   engine.LandingJudgement
	}{
		{name: "landed", judge: engine.LandingJudgement{Head: head, Landed: true}},
		{name: "dropped", dropped: true, judge: engine.LandingJudgement{Head: head, Unlanded: 2}},
		{name: "dirty", judge: engine.LandingJudgement{Head: head, Landed: true}},
		{name: "changed", judge: engine.LandingJudgement{Head: head, Landed: true}},
		{name: "claimed", judge: engine.LandingJudgement{Head: head, Landed: true}},
		{name: "working", judge: engine.LandingJudgement{Head: head, Unlanded: 1}},
	} {
		p := memPlace("fix", c.name, "main")
		p.Repo, p.Path, p.Host = repo, filepath.Join(repo, record.PlacesDir, p.ID), "h"
		p.Stages[0].State = agentrun.StateDelivered
		if c.dropped {
			p.Dropped = &memAt
		}
		if err := os.MkdirAll(p.Path, 0o755); err != nil {
			t.Fatal(err)
		}
		w.wts = append(w.wts, git.Worktree{Path: p.Path, Branch: p.BranchRef(), Head: head})
		w.judged[p.ID] = c.judge
		changes = append(changes, record.PlaceChange(nil, p, "launch"))
	}
	w.dirty[filepath.Join(repo, record.PlacesDir, "fix--dirty")] = []string{"notes.txt"}
	w.changed[filepath.Join(repo, record.PlacesDir, "fix--changed")] = "its .git file"
	if _, err := store.Write(ctx, changes); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Use(ctx, "fix--claimed", refs.Session{Key: "sid:other", PID: os.Getpid(), Host: "h"}, false); err != nil {
		t.Fatal(err)
	}
	env := &stage.Env{Host: "h", Now: func() time.Time { return memAt }, Out: io.Discard}
	ps := &Places{r: &stage.Repository{Env: env, Store: store}, wt: w}
	results, err := ps.Tidy(ctx, TidyOptions{Gate: stage.GateOptions{Session: refs.Session{Key: "sid:me", PID: os.Getpid(), Host: "h"}}})
	if err == nil || !strings.Contains(err.Error(), "fix--claimed") {
		t.Errorf("tidy: %v, want the claimed place named", err)
	}
	got := map[string]string{}
	for _, r := range results {
		got[r.Place] = r.Worktree + "/" + r.Branch + "/" + r.Kept
	}
	want := map[string]string{
		"fix--landed":  "removed/deleted/",
		"fix--dropped": "removed/kept/branch fix/dropped holds 2 unlanded commits",
		"fix--dirty":   "kept/kept/worktree has uncommitted or untracked files: notes.txt",
		"fix--changed": "kept/kept/the worktree's git files were changed: its .git file",
		"fix--claimed": "kept/kept/claimed by sid:other",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tidy did\n %v\nwant\n %v", got, want)
	}
	if want := []string{"remove fix--dropped", "remove fix--landed", "delete refs/heads/fix/landed at 2222"}; !slices.Equal(w.did, want) {
		t.Errorf("git acts %q, want %q", w.did, want)
	}
	for id, phase := range map[string]string{"fix--landed": record.PhaseTidied, "fix--dropped": record.PhaseMade, "fix--dirty": record.PhaseMade, "fix--working": record.PhaseMade} {
		if _, p, err := record.ReadPlace(ctx, store, id); err != nil || p.Phase != phase {
			t.Errorf("%s after tidy: phase %v, want %s (%v)", id, p.Phase, phase, err)
		}
	}
	if _, p, _ := record.ReadPlace(ctx, store, "fix--landed"); p.Tidied == nil || p.Tidied.Reason != "landed" || p.Tidied.BranchHead != head {
		t.Errorf("the landed place's tidy record: %+v, want landed at the judged head", p.Tidied)
	}
	if _, p, _ := record.ReadPlace(ctx, store, "fix--dirty"); !strings.Contains(p.Kept, "notes.txt") {
		t.Errorf("the dirty place's record keeps %q, want why", p.Kept)
	}
}
