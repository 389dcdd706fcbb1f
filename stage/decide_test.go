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
