package engine

import (
	"os"
	"os/exec"
	"reflect"
	"testing"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// TestDecide_S1_A3_K6_W1_W2: what a stage adds to the run lifecycle's
// decision (agent/run's table holds the run's own rows): a delivery closes
// the stage with its report and makes the next stage current, a landing
// ends the last stage landed, a cut reads the report the agent left, a
// recreation leaves its message for the fresh run, a step that moves
// nothing else records the task count. decide never changes the place it
// is given.
func TestDecide_S1_A3_K6_W1_W2(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tm := stage.EngineOptions{ConfirmWindow: time.Minute, ReportGrace: time.Minute, RemindAfter: 2 * time.Minute, StuckAfter: 30 * time.Minute}
	two := func(st record.StageRecord) *record.Place {
		return &record.Place{ID: "fix--a", Stages: []record.StageRecord{st, {Name: "submit", Life: run.Life{State: record.StagePending}}}}
	}
	working := func(extra func(*record.StageRecord)) record.StageRecord {
		st := record.StageRecord{Name: "code", Deliverable: stage.DeliverCommit, Life: run.Life{State: run.StateWorking, Started: &t0, BudgetMs: 40 * 60 * 1000},
			Agent: &run.Agent{Pane: "p", SentAt: t0, Sends: 1, Transcript: "/t"}}
		if extra != nil {
			extra(&st)
		}
		return st
	}
	seen := func(o run.Observation) StepSeen { o.Up = true; return StepSeen{Observation: o, Head: "abc"} }
	tasks := &record.TaskCount{Done: 1, Total: 3}
	for _, c := range []struct {
		name    string
		p       *record.Place
		seen    StepSeen
		write   string
		kind    string // "write", "end", "cut", ""
		current int
		state   string
		check   func(t *testing.T, st *record.StageRecord)
	}{
		{"turn closed: delivered with its report, next stage", two(working(nil)),
			seen(run.Observation{Now: t0, Transcript: true, Turn: agent.TurnDone, LastAssistant: "STAGE REPORT\ndone: x", Delivered: true, What: "commit"}),
			"delivered: commit; next stage submit", "end", 1, run.StateDelivered, func(t *testing.T, st *record.StageRecord) {
				if st.Report == nil || st.ReportMissing || st.At != "abc" || st.Delivered != "commit" {
					t.Errorf("report %+v missing %v at %q delivered %q", st.Report, st.ReportMissing, st.At, st.Delivered)
				}
			}},
		{"delivered with no report: flagged (W2)", two(working(nil)),
			seen(run.Observation{Now: t0, Transcript: true, Turn: agent.TurnDone, LastAssistant: "done", Delivered: true, What: "commit"}),
			"delivered: commit; next stage submit", "end", 1, run.StateDelivered, func(t *testing.T, st *record.StageRecord) {
				if !st.ReportMissing {
					t.Error("a delivery with no STAGE REPORT is not flagged")
				}
			}},
		{"a landed stage on the last stage", &record.Place{ID: "fix--a", Stages: []record.StageRecord{working(func(s *record.StageRecord) { s.Deliverable = stage.DeliverLanded })}},
			seen(run.Observation{Now: t0, Delivered: true, What: "landed"}), "delivered: landed", "end", 0, record.StateLanded, nil},
		{"the task count moves", two(working(nil)), StepSeen{Observation: run.Observation{Now: t0, Up: true}, Tasks: tasks}, "tasks 1/3", "write", 0, run.StateWorking, nil},
		{"the same task count moves nothing", two(working(func(s *record.StageRecord) { s.Tasks = &record.TaskCount{Done: 1, Total: 3} })),
			StepSeen{Observation: run.Observation{Now: t0, Up: true, Transcript: true, Turn: agent.TurnRunning}, Tasks: tasks}, "", "", 0, run.StateWorking, nil},
		{"budget used up: cut, the report it left read", two(working(nil)),
			seen(run.Observation{Now: t0.Add(40 * time.Minute), Transcript: true, LastAssistant: "STAGE REPORT\ndone: half"}), "cut: its budget of 40m0s was used up", "cut", 0, run.StateCut,
			func(t *testing.T, st *record.StageRecord) {
				if st.Report == nil {
					t.Error("the cut stage's report is not read")
				}
			}},
		{"a recreation leaves its message for the fresh run", two(working(nil)),
			seen(run.Observation{Now: t0, Transcript: true, Turn: agent.TurnDone, Recreate: "step 2"}),
			"the agent asked for a fresh session: ended; a fresh one starts with its resume message", "end", 0, record.StagePending,
			func(t *testing.T, st *record.StageRecord) {
				if st.Recreated != 1 || st.Followup != run.RecreatedNote+"step 2" {
					t.Errorf("recreated %d followup %q", st.Recreated, st.Followup)
				}
			}},
		{"the agent exits mid-turn: blocked, the next stage not started", two(working(nil)),
			StepSeen{Observation: run.Observation{Now: t0, Transcript: true, Turn: agent.TurnRunning, Exit: &agent.Exit{Status: 0}}},
			"blocked: the agent ended before it delivered: it exited with status 0", "end", 0, run.StateBlocked, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := clonePlace(c.p)
			in.Stages[in.Current].Agent = new(*c.p.Stages[c.p.Current].Agent)
			q, mv := decide(c.p, c.seen, stagePolicy(tm, c.p, &c.p.Stages[c.p.Current]))
			if !reflect.DeepEqual(in, c.p) {
				t.Fatal("decide changed the place it was given")
			}
			kind := ""
			switch {
			case mv.End == run.SnapshotEnd:
				kind = "end"
			case mv.End == run.SnapshotCut:
				kind = "cut"
			case mv.Tell != "":
				kind = "tell"
			case mv.Write != "":
				kind = "write"
			}
			if kind != c.kind || mv.Write != c.write {
				t.Fatalf("move %s %q; want %s %q", kind, mv.Write, c.kind, c.write)
			}
			first := &q.Stages[c.p.Current]
			if q.Current != c.current || first.State != c.state {
				t.Errorf("current %d, state %q; want %d, %q", q.Current, first.State, c.current, c.state)
			}
			if c.check != nil {
				c.check(t, first)
			}
		})
	}
}

// TestStartedByAnother_A1: a stage a command set pending to start itself
// (retry, go on, reopen) is that command's to start while it lives, so
// its fresh agent gets that command's environment; a starter that died,
// or none, leaves it to anyone on the place's host.
func TestStartedByAnother_A1(t *testing.T) {
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer live.Process.Kill()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	env := &stage.Env{Host: "h", PID: os.Getpid()}
	for _, c := range []struct {
		name    string
		starter *record.Proc
		want    bool
	}{
		{"no starter", nil, false},
		{"this process", &record.Proc{PID: os.Getpid(), Host: "h"}, false},
		{"another live process", &record.Proc{PID: live.Process.Pid, Host: "h"}, true},
		{"a starter that died", &record.Proc{PID: dead.Process.Pid, Host: "h"}, false},
	} {
		st := &record.StageRecord{Name: "code", Life: run.Life{State: record.StagePending}, Starter: c.starter}
		if got := startedByAnother(env, st); got != c.want {
			t.Errorf("%s: startedByAnother = %v, want %v", c.name, got, c.want)
		}
	}
}
