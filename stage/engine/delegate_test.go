package engine

import (
	"strings"
	"testing"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// TestDelegationState_A9: where a delegated place stands for its
// commissioner, from its record alone.
func TestDelegationState_A9(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name string
		p    record.Place
		want string
	}{
		{"top-level", record.Place{Stages: []record.StageRecord{{Life: run.Life{State: run.StateWorking}}}}, ""},
		{"working", child(run.StateWorking), record.DelegationWorking},
		{"a later stage pending", record.Place{Parent: &record.Delegation{}, Phase: record.PhaseMade, Stages: []record.StageRecord{{Life: run.Life{State: run.StateDelivered}}, {Life: run.Life{State: record.StagePending}}}, Current: 1}, record.DelegationWorking},
		{"waiting is blocked", child(run.StateWaiting), record.DelegationBlocked},
		{"stuck is blocked", child(run.StateStuck), record.DelegationBlocked},
		{"cut is blocked", child(run.StateCut), record.DelegationBlocked},
		{"last stage delivered", child(run.StateDelivered), record.DelegationFinished},
		{"landed", child(record.StateLanded), record.DelegationFinished},
		{"accepted", func() record.Place {
			p := child(run.StateDelivered)
			p.Parent.Outcome = record.OutcomeAccepted
			return p
		}(), record.DelegationAccepted},
		{"rolled back", func() record.Place { p := child(run.StateCut); p.Parent.Outcome = record.OutcomeRolledBack; return p }(), record.DelegationRolledBack},
		{"dropped", func() record.Place { p := child(run.StateCut); p.Dropped = &now; return p }(), record.DelegationAborted},
		{"tidied landed by hand", func() record.Place {
			p := child(run.StateDelivered)
			p.Phase, p.Tidied = record.PhaseTidied, &record.TidyRecord{Reason: "landed"}
			return p
		}(), record.DelegationAccepted},
	} {
		if got := record.DelegationState(&c.p); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func child(state string) record.Place {
	return record.Place{Parent: &record.Delegation{Parent: "lead--x"}, Phase: record.PhaseMade, Stages: []record.StageRecord{{Life: run.Life{State: state}}}}
}

// TestRecreateEndsTheRunAndCarriesItsMessage: the run is ended (End, so
// its agent is verified gone) and the next run is told the message.
func TestRecreateEndsTheRunAndCarriesItsMessage(t *testing.T) {
	p := &record.Place{Stages: []record.StageRecord{{Life: run.Life{State: run.StateWorking}, Agent: &run.Agent{Pane: "p", Transcript: "/t"}}}}
	seen := StepSeen{Observation: run.Observation{Transcript: true, Up: true, Turn: agent.TurnDone, Recreate: "step 2"}}
	q, mv := decide(p, seen, stagePolicy(stage.EngineOptions{}, p, &p.Stages[0]))
	st := &q.Stages[0]
	if mv.End == "" || st.Recreated != 1 || st.Followup != run.RecreatedNote+"step 2" {
		t.Fatalf("move %+v, stage %+v", mv, st)
	}
	notes := PromptNotes(&record.Place{}, st, nil)
	if !strings.HasSuffix(notes, run.RecreatedNote+"step 2") {
		t.Fatalf("the next prompt ends %q", notes)
	}
}
