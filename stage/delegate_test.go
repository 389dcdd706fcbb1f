package stage

import (
	"strings"
	"testing"
	"time"

	"github.com/git-flume/git-flume/agent"
	"github.com/git-flume/git-flume/agent/run"
)

// TestDelegationState_A9: where a delegated place stands for its
// commissioner, from its record alone (issue 17).
func TestDelegationState_A9(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name string
		p    Place
		want string
	}{
		{"top-level", Place{Stages: []StageRecord{{Life: run.Life{State: StateWorking}}}}, ""},
		{"working", child(StateWorking), DelegationWorking},
		{"a later stage pending", Place{Parent: &Delegation{}, Phase: PhaseMade, Stages: []StageRecord{{Life: run.Life{State: StateDelivered}}, {Life: run.Life{State: StagePending}}}, Current: 1}, DelegationWorking},
		{"waiting is blocked", child(StateWaiting), DelegationBlocked},
		{"stuck is blocked", child(StateStuck), DelegationBlocked},
		{"cut is blocked", child(StateCut), DelegationBlocked},
		{"last stage delivered", child(StateDelivered), DelegationFinished},
		{"landed", child(StateLanded), DelegationFinished},
		{"accepted", func() Place { p := child(StateDelivered); p.Parent.Outcome = OutcomeAccepted; return p }(), DelegationAccepted},
		{"rolled back", func() Place { p := child(StateCut); p.Parent.Outcome = OutcomeRolledBack; return p }(), DelegationRolledBack},
		{"dropped", func() Place { p := child(StateCut); p.Dropped = &now; return p }(), DelegationAborted},
		{"tidied landed by hand", func() Place {
			p := child(StateDelivered)
			p.Phase, p.Tidied = PhaseTidied, &TidyRecord{Reason: "landed"}
			return p
		}(), DelegationAccepted},
	} {
		if got := DelegationState(&c.p); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func child(state string) Place {
	return Place{Parent: &Delegation{Parent: "lead--x"}, Phase: PhaseMade, Stages: []StageRecord{{Life: run.Life{State: state}}}}
}

// TestRecreateEndsTheRunAndCarriesItsMessage: the run is ended (End, so
// its agent is verified gone) and the next run is told the message.
func TestRecreateEndsTheRunAndCarriesItsMessage(t *testing.T) {
	p := &Place{Stages: []StageRecord{{Life: run.Life{State: StateWorking}, Agent: &AgentRun{Pane: "p", Transcript: "/t"}}}}
	seen := StepSeen{Observation: run.Observation{Transcript: true, Up: true, Turn: agent.TurnDone, Recreate: "step 2"}}
	q, mv := decide(p, seen, EngineOptions{}.policy(p, &p.Stages[0]))
	st := &q.Stages[0]
	if mv.End == "" || st.Recreated != 1 || st.Followup != RecreatedNote+"step 2" {
		t.Fatalf("move %+v, stage %+v", mv, st)
	}
	notes := promptNotes(&Place{}, st, nil)
	if !strings.HasSuffix(notes, RecreatedNote+"step 2") {
		t.Fatalf("the next prompt ends %q", notes)
	}
}
