package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/stage"
)

// TestDelegationState_A9: where a delegated place stands for its
// commissioner, from its record alone.
func TestDelegationState_A9(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name string
		p    stage.Place
		want string
	}{
		{"top-level", stage.Place{Stages: []stage.StageRecord{{Life: run.Life{State: run.StateWorking}}}}, ""},
		{"working", child(run.StateWorking), stage.DelegationWorking},
		{"a later stage pending", stage.Place{Parent: &stage.Delegation{}, Phase: stage.PhaseMade, Stages: []stage.StageRecord{{Life: run.Life{State: run.StateDelivered}}, {Life: run.Life{State: stage.StagePending}}}, Current: 1}, stage.DelegationWorking},
		{"waiting is blocked", child(run.StateWaiting), stage.DelegationBlocked},
		{"stuck is blocked", child(run.StateStuck), stage.DelegationBlocked},
		{"cut is blocked", child(run.StateCut), stage.DelegationBlocked},
		{"last stage delivered", child(run.StateDelivered), stage.DelegationFinished},
		{"landed", child(stage.StateLanded), stage.DelegationFinished},
		{"accepted", func() stage.Place {
			p := child(run.StateDelivered)
			p.Parent.Outcome = stage.OutcomeAccepted
			return p
		}(), stage.DelegationAccepted},
		{"rolled back", func() stage.Place { p := child(run.StateCut); p.Parent.Outcome = stage.OutcomeRolledBack; return p }(), stage.DelegationRolledBack},
		{"dropped", func() stage.Place { p := child(run.StateCut); p.Dropped = &now; return p }(), stage.DelegationAborted},
		{"tidied landed by hand", func() stage.Place {
			p := child(run.StateDelivered)
			p.Phase, p.Tidied = stage.PhaseTidied, &stage.TidyRecord{Reason: "landed"}
			return p
		}(), stage.DelegationAccepted},
	} {
		if got := stage.DelegationState(&c.p); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func child(state string) stage.Place {
	return stage.Place{Parent: &stage.Delegation{Parent: "lead--x"}, Phase: stage.PhaseMade, Stages: []stage.StageRecord{{Life: run.Life{State: state}}}}
}

// TestRecreateEndsTheRunAndCarriesItsMessage: the run is ended (End, so
// its agent is verified gone) and the next run is told the message.
func TestRecreateEndsTheRunAndCarriesItsMessage(t *testing.T) {
	p := &stage.Place{Stages: []stage.StageRecord{{Life: run.Life{State: run.StateWorking}, Agent: &run.Agent{Pane: "p", Transcript: "/t"}}}}
	seen := StepSeen{Observation: run.Observation{Transcript: true, Up: true, Turn: agent.TurnDone, Recreate: "step 2"}}
	q, mv := decide(p, seen, stagePolicy(stage.EngineOptions{}, p, &p.Stages[0]))
	st := &q.Stages[0]
	if mv.End == "" || st.Recreated != 1 || st.Followup != run.RecreatedNote+"step 2" {
		t.Fatalf("move %+v, stage %+v", mv, st)
	}
	notes := PromptNotes(&stage.Place{}, st, nil)
	if !strings.HasSuffix(notes, run.RecreatedNote+"step 2") {
		t.Fatalf("the next prompt ends %q", notes)
	}
}
