package stage

import (
	"testing"
	"time"

	"github.com/git-flume/git-flume/agent"
)

// TestDecideWorking_A6_A7_A8: what the engine does with a working, waiting
// or stuck stage, from what it observed, with no pane, transcript file or
// clock: each row is one observation and the one move it makes.
func TestDecideWorking_A6_A7_A8(t *testing.T) {
	const remind, stuck = 2 * time.Minute, 30 * time.Minute
	for _, c := range []struct {
		name  string
		st    StageRecord
		seen  workingSeen
		state string
		write string
		tell  string
	}{
		{"a need waits", StageRecord{State: StateWorking}, workingSeen{Need: "the API key"}, StateWaiting, "waiting: the API key", ""},
		{"the same need again moves nothing", StageRecord{State: StateWaiting, Need: "the API key"}, workingSeen{Need: "the API key"}, StateWaiting, "", ""},
		{"a new need is recorded", StageRecord{State: StateWaiting, Need: "a"}, workingSeen{Need: "b"}, StateWaiting, "waiting: b", ""},
		{"an answered need works again", StageRecord{State: StateWaiting, Need: "a"}, workingSeen{Turn: agent.TurnRunning}, StateWorking, "need answered", ""},
		{"a turn that errs blocks", StageRecord{State: StateWorking}, workingSeen{Turn: agent.TurnError, ErrorText: "overloaded"}, StateBlocked, "blocked: the agent's turn ended with an error: overloaded", ""},
		{"cut for length: the one recovery prompt", StageRecord{State: StateWorking}, workingSeen{Turn: agent.TurnLength}, StateWorking, "reply cut for length: sent the one recovery prompt", LengthMessage},
		{"cut again after it blocks", StageRecord{State: StateWorking, LengthPrompted: true}, workingSeen{Turn: agent.TurnLength, LengthRetried: true}, StateBlocked, "blocked: its reply was cut for length again after the recovery prompt", ""},
		{"recovery prompt not seen yet: nothing", StageRecord{State: StateWorking, LengthPrompted: true}, workingSeen{Turn: agent.TurnLength, Quiet: time.Minute}, StateWorking, "", ""},
		{"turn done, quiet: the one reminder", StageRecord{State: StateWorking, Deliverable: DeliverCommit}, workingSeen{Turn: agent.TurnDone, Quiet: remind}, StateWorking, "turn ended with neither the deliverable nor NEEDS:; sent the one reminder", "reminder"},
		{"turn done, not quiet long enough: nothing", StageRecord{State: StateWorking}, workingSeen{Turn: agent.TurnDone, Quiet: remind - time.Second}, StateWorking, "", ""},
		{"reminded once: never again, stuck later", StageRecord{State: StateWorking, Reminded: true}, workingSeen{Turn: agent.TurnDone, Quiet: stuck + time.Second}, StateStuck, "stuck: quiet for 30m1s with no deliverable and no need", ""},
		{"quiet past the limit is stuck", StageRecord{State: StateWorking}, workingSeen{Turn: agent.TurnRunning, Quiet: stuck + time.Minute}, StateStuck, "stuck: quiet for 31m0s with no deliverable and no need", ""},
		{"a stuck transcript that moves is active", StageRecord{State: StateStuck}, workingSeen{Turn: agent.TurnRunning, Quiet: time.Second}, StateWorking, "active again", ""},
		{"working and recent: nothing", StageRecord{State: StateWorking}, workingSeen{Turn: agent.TurnRunning, Quiet: time.Second}, StateWorking, "", ""},
		// issue 17: a run that asks for a fresh session
		{"a recreation request ends the run for a fresh one", StageRecord{State: StateWorking}, workingSeen{Turn: agent.TurnDone, Recreate: "go on from step 2"}, StagePending,
			"the agent asked for a fresh session: ended; a fresh one starts with its resume message", ""},
		{"past the recreations allowed it blocks", StageRecord{State: StateWorking, Recreated: MaxRecreations}, workingSeen{Turn: agent.TurnDone, Recreate: "again"}, StateBlocked,
			"blocked: its runs asked for a fresh session 4 times; the last asked: again", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := c.st
			mv := decideWorking(&st, c.seen, remind, stuck)
			if st.State != c.state || mv.Write != c.write {
				t.Errorf("state %q, write %q; want %q, %q", st.State, mv.Write, c.state, c.write)
			}
			switch {
			case c.tell == "" && mv.Tell != "":
				t.Errorf("tells %q, want nothing typed", mv.Tell)
			case c.tell == "reminder" && mv.Tell != reminder(&st):
				t.Errorf("tells %q, want the reminder", mv.Tell)
			case c.tell != "" && c.tell != "reminder" && mv.Tell != c.tell:
				t.Errorf("tells %q, want %q", mv.Tell, c.tell)
			}
			if mv.Tell != "" && mv.Sent == nil {
				t.Error("a follow-up with no flag to mark it sent")
			}
		})
	}
}

// TestDecide_S1_A3_K6_W1_W2: the engine's whole decision for an active
// stage, from an observation alone: which move a step makes and what the
// record then says, with no pane, transcript file, git or clock.
func TestDecide_S1_A3_K6_W1_W2(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	tm := timers{Window: time.Minute, Grace: time.Minute, Remind: 2 * time.Minute, Stuck: 30 * time.Minute}
	agentRun := func() *AgentRun { return &AgentRun{Pane: "p", SentAt: t0, Sends: 1} }
	two := func(st StageRecord) *Place {
		return &Place{ID: "fix--a", Stages: []StageRecord{st, {Name: "submit", State: StagePending}}}
	}
	working := func(extra func(*StageRecord)) StageRecord {
		st := StageRecord{Name: "code", State: StateWorking, Deliverable: DeliverCommit, Started: &t0, BudgetMs: 40 * 60 * 1000, Agent: agentRun()}
		if extra != nil {
			extra(&st)
		}
		return st
	}
	tasks := &TaskCount{Done: 1, Total: 3}
	for _, c := range []struct {
		name    string
		p       *Place
		seen    stepSeen
		write   string // the move's record message
		kind    string // "write", "tell", "end", "cut", "resend", ""
		current int
		state   string // the decided stage's state after
	}{
		{"a transcript found is recorded first", two(working(func(s *StageRecord) { s.State = StateStarting })),
			stepSeen{Now: t0, Found: "/t.jsonl", Done: true}, "transcript /t.jsonl", "write", 0, StateStarting},
		{"the prompt confirmed before the deliverable", two(working(func(s *StageRecord) { s.State = StateStarting })),
			stepSeen{Now: t0, Transcript: true, Confirmed: true, Done: true, What: "commit"}, "prompt confirmed in the transcript", "write", 0, StateWorking},
		{"delivered mid-turn: the grace starts", two(working(nil)),
			stepSeen{Now: t0.Add(time.Minute), Transcript: true, Working: workingSeen{Turn: agent.TurnRunning}, Up: true, Done: true, What: "commit"},
			"deliverable in git; the agent closes its turn", "write", 0, StateWorking},
		{"within the grace: nothing", two(working(func(s *StageRecord) { s.Landing = at(time.Minute) })),
			stepSeen{Now: t0.Add(time.Minute + 59*time.Second), Transcript: true, Working: workingSeen{Turn: agent.TurnRunning}, Up: true, Done: true, What: "commit"},
			"", "", 0, StateWorking},
		{"past the grace: ended, delivered, next stage", two(working(func(s *StageRecord) { s.Landing = at(time.Minute) })),
			stepSeen{Now: t0.Add(2 * time.Minute), Transcript: true, Working: workingSeen{Turn: agent.TurnRunning}, Up: true, Done: true, What: "commit", Head: "abc"},
			"delivered: commit; next stage submit", "end", 1, StateDelivered},
		{"turn closed: delivered at once, no grace", two(working(nil)),
			stepSeen{Now: t0, Transcript: true, Working: workingSeen{Turn: agent.TurnDone}, LastAssistant: "STAGE REPORT\ndone: x", Done: true, What: "commit"},
			"delivered: commit; next stage submit", "end", 1, StateDelivered},
		{"agent gone mid-turn: no grace", two(working(nil)),
			stepSeen{Now: t0, Transcript: true, Working: workingSeen{Turn: agent.TurnRunning}, Up: false, Done: true, What: "commit"},
			"delivered: commit; next stage submit", "end", 1, StateDelivered},
		{"a landed stage on the last stage", &Place{ID: "fix--a", Stages: []StageRecord{working(func(s *StageRecord) { s.Deliverable = DeliverLanded })}},
			stepSeen{Now: t0, Done: true, What: "landed"}, "delivered: landed", "end", 0, StateLanded},
		{"the task count moves", two(working(nil)),
			stepSeen{Now: t0, Tasks: tasks}, "tasks 1/3", "write", 0, StateWorking},
		{"the same task count moves nothing", two(working(func(s *StageRecord) { s.Tasks = &TaskCount{Done: 1, Total: 3} })),
			stepSeen{Now: t0, Tasks: tasks, Transcript: true, Working: workingSeen{Turn: agent.TurnRunning}}, "", "", 0, StateWorking},
		{"an ended agent: nothing more", two(working(func(s *StageRecord) { s.Agent.Ended = true })),
			stepSeen{Now: t0.Add(time.Hour)}, "", "", 0, StateWorking},
		{"budget used up: cut", two(working(nil)),
			stepSeen{Now: t0.Add(40 * time.Minute), Transcript: true}, "cut: its budget of 40m0s was used up", "cut", 0, StateCut},
		{"the deliverable wins over a used-up budget", two(working(nil)),
			stepSeen{Now: t0.Add(41 * time.Minute), Done: true, What: "commit"}, "delivered: commit; next stage submit", "end", 1, StateDelivered},
		{"three quarters: told once", two(working(nil)),
			stepSeen{Now: t0.Add(30 * time.Minute), Transcript: true, Working: workingSeen{Turn: agent.TurnRunning}},
			"three quarters of the budget used: told the agent to finish", "tell", 0, StateWorking},
		{"three quarters, told already: the state decides", two(working(func(s *StageRecord) { s.Told = true })),
			stepSeen{Now: t0.Add(31 * time.Minute), Transcript: true, Working: workingSeen{Turn: agent.TurnRunning, Quiet: 31 * time.Minute}},
			"stuck: quiet for 31m0s with no deliverable and no need", "write", 0, StateStuck},
		{"three quarters, composer busy: the state decides", two(working(nil)),
			stepSeen{Now: t0.Add(31 * time.Minute), Busy: true, Transcript: true, Working: workingSeen{Need: "a key", Turn: agent.TurnDone}},
			"waiting: a key", "write", 0, StateWaiting},
		{"the run's own stuck limit (flume.stuckAfter) decides", two(working(func(s *StageRecord) { s.StuckAfterMs = (10 * time.Minute).Milliseconds() })),
			stepSeen{Now: t0.Add(11 * time.Minute), Transcript: true, Working: workingSeen{Turn: agent.TurnRunning, Quiet: 11 * time.Minute}},
			"stuck: quiet for 11m0s with no deliverable and no need", "write", 0, StateStuck},
		{"blocked by a dialog, answered by hand: works again", two(working(func(s *StageRecord) { block(s, BlockDialog, dialogReason("trust?")) })),
			stepSeen{Now: t0.Add(time.Minute), Up: true, Screen: &agent.Screen{Busy: true}, Transcript: true, Confirmed: true, Working: workingSeen{Turn: agent.TurnRunning}},
			"the dialog was answered: prompt confirmed in the transcript", "write", 0, StateWorking},
		{"blocked by a dialog still on screen: stays blocked", two(working(func(s *StageRecord) { block(s, BlockDialog, dialogReason("trust?")) })),
			stepSeen{Now: t0.Add(time.Minute), Up: true, Screen: &agent.Screen{Dialog: true}, Transcript: true, Confirmed: true},
			"", "", 0, StateBlocked},
		{"a blocked record from before blocks were kept: read by its reason", two(working(func(s *StageRecord) { s.State, s.Reason = StateBlocked, dialogReason("trust?") })),
			stepSeen{Now: t0.Add(time.Minute), Up: true, Screen: &agent.Screen{Ready: true}, Transcript: true, Confirmed: true},
			"the dialog was answered: prompt confirmed in the transcript", "write", 0, StateWorking},
		{"blocked by an error, a turn runs again: works again", two(working(func(s *StageRecord) { block(s, BlockError, "overloaded") })),
			stepSeen{Now: t0.Add(time.Minute), Transcript: true, Working: workingSeen{Turn: agent.TurnRunning}},
			"the agent works again", "write", 0, StateWorking},
		{"blocked, its deliverable arrives: delivered", two(working(func(s *StageRecord) { block(s, BlockDialog, dialogReason("trust?")) })),
			stepSeen{Now: t0.Add(time.Minute), Transcript: true, Working: workingSeen{Turn: agent.TurnDone}, Done: true, What: "commit"},
			"delivered: commit; next stage submit", "end", 1, StateDelivered},
		{"blocked, three quarters of the budget: nothing typed", two(working(func(s *StageRecord) { block(s, BlockError, "overloaded") })),
			stepSeen{Now: t0.Add(31 * time.Minute), Transcript: true, Working: workingSeen{Turn: agent.TurnError}},
			"", "", 0, StateBlocked},
		{"the turn after the reminder ends the same way: blocked", two(working(func(s *StageRecord) { s.Reminded = true })),
			stepSeen{Now: t0.Add(5 * time.Minute), Transcript: true, Working: workingSeen{Turn: agent.TurnDone, Reminded: true, Quiet: 2 * time.Minute}},
			"blocked: its turn ended again with neither the deliverable nor NEEDS: after the one reminder", "write", 0, StateBlocked},
		{"a usage limit that names its reset parks the stage", two(working(nil)),
			stepSeen{Now: t0.Add(time.Minute), Transcript: true, Working: workingSeen{Turn: agent.TurnError, Limited: true, Reset: t0.Add(time.Hour), Now: t0.Add(time.Minute), ErrorText: "limit"}},
			"parked: the provider's usage limit was reached; flume resumes it once at 2026-01-01 13:00 UTC", "write", 0, StateParked},
		{"parked before its reset: nothing, budget paused", two(working(func(s *StageRecord) { s.State, s.ParkedUntil = StateParked, at(time.Hour) })),
			stepSeen{Now: t0.Add(50 * time.Minute), Transcript: true, Working: workingSeen{Turn: agent.TurnError, Limited: true}},
			"", "", 0, StateParked},
		{"parked past its reset: the one follow-up, working once typed", two(working(func(s *StageRecord) { s.State, s.ParkedAt, s.ParkedUntil = StateParked, at(time.Minute), at(time.Hour) })),
			stepSeen{Now: t0.Add(61 * time.Minute), Transcript: true, Working: workingSeen{Turn: agent.TurnError, Limited: true}},
			"usage limit reset: sent the one follow-up to resume", "tell", 0, StateParked},
		{"resumed, the resume not in the transcript yet: the old error decides nothing", two(working(func(s *StageRecord) { s.Resumed, s.ParkedMs = true, time.Hour.Milliseconds() })),
			stepSeen{Now: t0.Add(62 * time.Minute), Transcript: true, Working: workingSeen{Turn: agent.TurnError, Limited: true, Reset: t0.Add(time.Hour)}},
			"", "", 0, StateWorking},
		{"the limit again after the one resume blocks", two(working(func(s *StageRecord) { s.Resumed, s.ParkedMs = true, time.Hour.Milliseconds() })),
			stepSeen{Now: t0.Add(63 * time.Minute), Transcript: true, Working: workingSeen{Turn: agent.TurnError, Limited: true, Resumed: true, Reset: t0.Add(2 * time.Hour), ErrorText: "limit"}},
			"blocked: the provider's usage limit was reached again after the one resume: limit", "write", 0, StateBlocked},
		{"busy: no reminder typed", two(working(nil)),
			stepSeen{Now: t0.Add(5 * time.Minute), Busy: true, Transcript: true, Working: workingSeen{Turn: agent.TurnDone, Quiet: 3 * time.Minute}},
			"", "", 0, StateWorking},
		{"starting within the window: slow is not failed", two(working(func(s *StageRecord) { s.State = StateStarting })),
			stepSeen{Now: t0.Add(59 * time.Second), Up: true, Screen: &agent.Screen{Busy: true}}, "", "", 0, StateStarting},
		{"starting, a dialog on screen: blocked at once", two(working(func(s *StageRecord) { s.State = StateStarting })),
			stepSeen{Now: t0.Add(time.Second), Up: true, Screen: &agent.Screen{Dialog: true, Words: "Do you trust the files in this folder?"}},
			"blocked: Do you trust the files in this folder?", "write", 0, StateBlocked},
		{"past the window: the prompt is checked and sent again", two(working(func(s *StageRecord) { s.State = StateStarting })),
			stepSeen{Now: t0.Add(time.Minute), Up: true, Screen: &agent.Screen{Ready: true}}, "", "resend", 0, StateStarting},
		{"an operator's agent with no transcript past the window: unknown", two(working(func(s *StageRecord) { s.State = StateStarting; s.Agent.Pane = "print" })),
			stepSeen{Now: t0.Add(time.Minute)}, "no transcript yet", "write", 0, StateUnknown},
		{"an operator's agent already unknown: watched", two(working(func(s *StageRecord) { s.State = StateUnknown; s.Agent.Pane = "print" })),
			stepSeen{Now: t0.Add(2 * time.Minute)}, "", "", 0, StateUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			first := &c.p.Stages[c.p.Current]
			mv := decide(c.p, c.seen, tm)
			kind := ""
			switch {
			case mv.Resend:
				kind = "resend"
			case mv.End == snapshotEnd:
				kind = "end"
			case mv.End == snapshotCut:
				kind = "cut"
			case mv.Tell != "":
				kind = "tell"
			case mv.Write != "":
				kind = "write"
			}
			if kind != c.kind || mv.Write != c.write {
				t.Fatalf("move %s %q; want %s %q", kind, mv.Write, c.kind, c.write)
			}
			if mv.End != "" && mv.Stage != first {
				t.Error("ends the agent of another stage than the one decided")
			}
			if c.p.Current != c.current || first.State != c.state {
				t.Errorf("current %d, state %q; want %d, %q", c.p.Current, first.State, c.current, c.state)
			}
			if mv.Tell != "" && (mv.Sent == nil || *mv.Sent) {
				t.Error("a follow-up must be marked sent only once typed")
			}
		})
	}
}
