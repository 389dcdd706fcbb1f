// The engine's decisions that need no I/O: given what a step observed of a
// stage, what moves. The run lifecycle (agent/run) decides the run; this
// file adds what is a stage's own: its deliverable's report and the next
// stage (K6, W2), its task count, and the policy a stage runs under. They
// are table-tested without tmux or a clock (decide_test.go).

package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// StepSeen is what one engine step observed of an active stage: its run
// (run.Observation) and what the deliverable was read at (K6).
type StepSeen struct {
	run.Observation
	// Head is the branch head the deliverable was read at; Tasks what a
	// change's tasks count there.
	Head  string
	Tasks *record.TaskCount
}

// clonePlace is a copy of p whose stages can be changed without touching p's.
func clonePlace(p *record.Place) *record.Place {
	q := *p
	q.Stages = slices.Clone(p.Stages)
	return &q
}

// decide is the engine's one decision for an active stage (S1): the place
// as it is to be recorded and the move that gets there. The run lifecycle
// decides the run (run.Decide); a delivery then closes the stage with its
// report and makes the next stage current, a cut reads the report the
// agent left, a recreation leaves its message for the fresh run, and a
// step that moves nothing else records the task count. p is never
// changed.
func decide(p *record.Place, seen StepSeen, pol run.Policy) (*record.Place, run.Move) {
	q := clonePlace(p)
	st := &q.Stages[q.Current]
	r, mv := run.Decide(st.Run(), seen.Observation, pol)
	st.SetRun(r)
	switch {
	case mv.Delivered:
		if seen.Transcript {
			st.Report = ParseReport(seen.LastAssistant)
		}
		st.ReportMissing = st.Report == nil
		st.Delivered, st.At, st.Tasks = mv.What, seen.Head, seen.Tasks
		if pol.StopShort && !seen.Delivered {
			st.NextRound = seen.NextRound // K4: go-on tells it
		}
		if st.Deliverable == stage.DeliverLanded {
			st.State = record.StateLanded
		}
		if q.Current+1 < len(q.Stages) {
			q.Current++
			mv.Write += "; next stage " + q.Stages[q.Current].Name
		}
	case mv.End == run.SnapshotCut:
		if seen.Transcript {
			st.Report = ParseReport(seen.LastAssistant)
		}
		st.ReportMissing = st.Report == nil
	case mv.Recreate:
		st.Followup = mv.Followup
	case mv == run.Move{} && seen.Tasks != nil && (st.Tasks == nil || *st.Tasks != *seen.Tasks):
		st.Tasks = seen.Tasks
		mv = run.Move{Write: fmt.Sprintf("tasks %d/%d", seen.Tasks.Done, seen.Tasks.Total)}
	}
	return q, mv
}

// EndStage records that st, still under way, ended without its
// deliverable at now, as state (cut when its place's work is over, blocked
// when an operator stopped it), for reason: its clock stops and status
// no longer shows it running. A stage that is not under way (pending,
// delivered, landed, cut, never-started) keeps its state.
func EndStage(st *record.StageRecord, state, reason string, now time.Time) {
	if !run.Active(st.State) && st.State != run.StateBlocked {
		return
	}
	st.State, st.Reason, st.Ended, st.Need = state, reason, &now, ""
	if state != run.StateBlocked {
		st.Block = ""
	}
}

// stagePolicy is how a stage's run is decided: a fresh agent per stage, which
// is told at three quarters of its budget (W1), reminded once (A8), may ask
// for a fresh session, and is reported stuck, never ended, when quiet (A7);
// a question's round may stop short (K4). A delegated place's stage runs under the same policy: its commissioner,
// not the lifecycle, decides what becomes of it.
func stagePolicy(o stage.EngineOptions, p *record.Place, st *record.StageRecord) run.Policy {
	pol := run.Policy{Window: o.Window(), Grace: o.Grace(), Remind: o.Remind(), Stuck: o.Stuck(),
		Reminder: reminder(st), Steer: true, Recreate: true, StopShort: roundStage(p, st), BudgetName: "budget"}
	if o.NoGrace {
		pol.Grace = 0
	}
	return pol
}
