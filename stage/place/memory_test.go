package place

import (
	"context"
	"strings"
	"testing"
	"time"

	agentrun "github.com/git-flume/git-flume/agents/run"
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
