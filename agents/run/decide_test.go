package run

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/git-flume/git-flume/agents"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *time.Time { x := t0.Add(d); return &x }

// stage is the policy a stage runs under, round a question's round's,
// worker the workspace worker's.
var (
	stage  = Policy{Window: time.Minute, Grace: time.Minute, Remind: 2 * time.Minute, Stuck: 30 * time.Minute, Reminder: "remind", Steer: true, Recreate: true, BudgetName: "budget"}
	round  = Policy{Window: time.Minute, Grace: time.Minute, Remind: 2 * time.Minute, Stuck: 30 * time.Minute, Reminder: "remind", Steer: true, Recreate: true, StopShort: true, BudgetName: "budget"}
	worker = Policy{Window: time.Minute, Stuck: 30 * time.Minute, TurnDelivers: true, QuietEnds: true, NeedEnds: true, BudgetName: "maximum runtime"}
)

func working(edit func(*Run)) Run {
	r := Run{Life: Life{State: StateWorking, Started: &t0, BudgetMs: (40 * time.Minute).Milliseconds()},
		Agent: &Agent{Pane: "p", SentAt: t0, Sends: 1, Transcript: "/t"}}
	if edit != nil {
		edit(&r)
	}
	return r
}

// TestDecide_A3_A6_A7_A8_A10_W1: the one lifecycle's decision, from an
// observation alone, for every kind of run: each row is one observation,
// the move it makes and the state recorded after, with no pane, transcript
// file or clock. Decide never changes the run it is given.
func TestDecide_A3_A6_A7_A8_A10_W1(t *testing.T) {
	up := func(o Observation) Observation { o.Up, o.Transcript = true, true; return o }
	for _, c := range []struct {
		name  string
		pol   Policy
		r     Run
		o     Observation
		kind  string // "write", "tell", "end", "cut", "resend", "deliver", "recreate", ""
		write string
		state string
		tell  string
	}{
		// A6, A7, A8: a run at work.
		{"a need waits", stage, working(nil), up(Observation{Now: t0, Need: "the API key"}), "write", "waiting: the API key", StateWaiting, ""},
		{"the same need again moves nothing", stage, working(func(r *Run) { r.State, r.Need = StateWaiting, "the API key" }), up(Observation{Now: t0, Need: "the API key"}), "", "", StateWaiting, ""},
		{"a new need is recorded", stage, working(func(r *Run) { r.State, r.Need = StateWaiting, "a" }), up(Observation{Now: t0, Need: "b"}), "write", "waiting: b", StateWaiting, ""},
		{"an answered need works again", stage, working(func(r *Run) { r.State, r.Need = StateWaiting, "a" }), up(Observation{Now: t0, Turn: agent.TurnRunning}), "write", "need answered", StateWorking, ""},
		{"a turn that errs blocks", stage, working(nil), up(Observation{Now: t0, Turn: agent.TurnError, ErrorText: "overloaded"}), "write", "blocked: the agent's turn ended with an error: overloaded", StateBlocked, ""},
		{"cut for length: the one recovery prompt", stage, working(nil), up(Observation{Now: t0, Turn: agent.TurnLength}), "tell", "reply cut for length: sent the one recovery prompt", StateWorking, LengthMessage},
		{"cut again after it blocks", stage, working(func(r *Run) { r.LengthPrompted = true }), up(Observation{Now: t0, Turn: agent.TurnLength, LengthRetried: true}), "write", "blocked: its reply was cut for length again after the recovery prompt", StateBlocked, ""},
		{"recovery prompt not seen yet: nothing", stage, working(func(r *Run) { r.LengthPrompted = true }), up(Observation{Now: t0, Turn: agent.TurnLength, Quiet: time.Minute}), "", "", StateWorking, ""},
		{"turn done, quiet: the one reminder", stage, working(nil), up(Observation{Now: t0, Turn: agent.TurnDone, Quiet: 2 * time.Minute}), "tell", "turn ended with neither the deliverable nor NEEDS:; sent the one reminder", StateWorking, "remind"},
		// A11: idle is shown at once, with when the reminder goes;
		// the turn's end from the agent's own Stop hook where it has one.
		{"turn done, not quiet long enough: shown idle", stage, working(nil), up(Observation{Now: t0, Turn: agent.TurnDone, Quiet: 2*time.Minute - time.Second}),
			"write", "idle: " + IdleReason(t0.Add(-2*time.Minute+time.Second), t0.Add(time.Second)), StateWorking, ""},
		{"turn done by its Stop hook: that time", stage, working(nil), up(Observation{Now: t0, Turn: agent.TurnDone, Quiet: time.Second, Stopped: t0.Add(-5 * time.Second)}),
			"write", "idle: " + IdleReason(t0.Add(-5*time.Second), t0.Add(2*time.Minute-time.Second)), StateWorking, ""},
		{"shown idle already: nothing", stage, working(func(r *Run) { r.Reason = IdleReason(t0.Add(-time.Second), t0.Add(2*time.Minute-time.Second)) }),
			up(Observation{Now: t0, Turn: agent.TurnDone, Quiet: time.Second}), "", "", StateWorking, ""},
		// A turn a person stopped (Esc, a permission refused): shown at
		// once, no reminder ever, stuck past the limit like any quiet.
		{"turn interrupted: shown, never reminded", stage, working(nil), up(Observation{Now: t0, Turn: agent.TurnInterrupted, Quiet: 5 * time.Minute}),
			"write", "idle: " + InterruptedReason(t0.Add(-5*time.Minute)), StateWorking, ""},
		{"turn interrupted, shown already: nothing", stage, working(func(r *Run) { r.Reason = InterruptedReason(t0.Add(-5 * time.Minute)) }),
			up(Observation{Now: t0, Turn: agent.TurnInterrupted, Quiet: 5 * time.Minute}), "", "", StateWorking, ""},
		{"turn interrupted, quiet past the limit: stuck", stage, working(func(r *Run) { r.Reason = InterruptedReason(t0.Add(-31 * time.Minute)) }),
			up(Observation{Now: t0, Turn: agent.TurnInterrupted, Quiet: 31 * time.Minute}), "write", "stuck: quiet for 31m0s with no deliverable and no need", StateStuck, ""},
		{"idle, then at work again", stage, working(func(r *Run) { r.Reason = IdleReason(t0.Add(-time.Second), t0) }),
			up(Observation{Now: t0, Turn: agent.TurnRunning, Quiet: time.Second}), "write", "at work again", StateWorking, ""},
		// A11: a permission the program's own hooks report blocks at
		// once with its words, ranked above a screen that looks ready; it
		// holds while they say it waits, whatever the screen shows.
		{"a permission from the hooks blocks, the screen ready", stage, working(nil),
			up(Observation{Now: t0, Turn: agent.TurnRunning, Permission: "Claude needs your permission to use Write", Screen: &agent.Screen{Ready: true, Input: true}}),
			"write", "blocked: the agent waits for a permission: Claude needs your permission to use Write", StateBlocked, ""},
		{"a permission before the prompt is confirmed blocks", stage, working(func(r *Run) { r.State = StateStarting }),
			up(Observation{Now: t0, Permission: "permission to use Bash (ls)"}), "write", "blocked: the agent waits for a permission: permission to use Bash (ls)", StateBlocked, ""},
		{"still asked, the screen unknown: still blocked", stage, working(func(r *Run) { r.Blocked(BlockDialog, PermissionReason("x")) }),
			up(Observation{Now: t0, Confirmed: true, Turn: agent.TurnRunning, Permission: "x", Screen: &agent.Screen{Words: "Erlauben?"}}), "", "", StateBlocked, ""},
		// A step that fell between Claude Code's request and its
		// notification of the same wait: the notification's own words.
		{"blocked on the request's summary, its notification since: its words", stage, working(func(r *Run) { r.Blocked(BlockDialog, PermissionReason("permission to use Bash (ls)")) }),
			up(Observation{Now: t0, Confirmed: true, Turn: agent.TurnRunning, Permission: "Claude needs your permission to use Bash"}),
			"write", "blocked: the agent waits for a permission: Claude needs your permission to use Bash", StateBlocked, ""},
		{"blocked by a screen's dialog, not a permission: its words kept", stage, working(func(r *Run) { r.Blocked(BlockDialog, DialogReason("trust?")) }),
			up(Observation{Now: t0, Confirmed: true, Turn: agent.TurnRunning, Permission: "x", Screen: &agent.Screen{Dialog: true, Words: "trust?"}}), "", "", StateBlocked, ""},
		{"answered (a tool ran): works again", stage, working(func(r *Run) { r.Blocked(BlockDialog, PermissionReason("x")) }),
			up(Observation{Now: t0, Confirmed: true, Turn: agent.TurnRunning, Screen: &agent.Screen{Ready: true, Input: true}}), "write", "the dialog was answered: prompt confirmed in the transcript", StateWorking, ""},
		{"reminded once: never again, stuck later", stage, working(func(r *Run) { r.Reminded = true }), up(Observation{Now: t0, Turn: agent.TurnDone, Quiet: 30*time.Minute + time.Second}), "write", "stuck: quiet for 30m1s with no deliverable and no need", StateStuck, ""},
		{"the turn after the reminder ends the same way: blocked", stage, working(func(r *Run) { r.Reminded = true }), up(Observation{Now: t0, Turn: agent.TurnDone, Reminded: true, Quiet: 2 * time.Minute}), "write", "blocked: its turn ended again with neither the deliverable nor NEEDS: after the one reminder", StateBlocked, ""},
		{"quiet past the limit is stuck", stage, working(nil), up(Observation{Now: t0, Turn: agent.TurnRunning, Quiet: 31 * time.Minute}), "write", "stuck: quiet for 31m0s with no deliverable and no need", StateStuck, ""},
		{"the run's own stuck limit decides", stage, working(func(r *Run) { r.StuckAfterMs = (10 * time.Minute).Milliseconds() }), up(Observation{Now: t0, Turn: agent.TurnRunning, Quiet: 11 * time.Minute}), "write", "stuck: quiet for 11m0s with no deliverable and no need", StateStuck, ""},
		{"a stuck transcript that moves is active", stage, working(func(r *Run) { r.State = StateStuck }), up(Observation{Now: t0, Turn: agent.TurnRunning, Quiet: time.Second}), "write", "active again", StateWorking, ""},
		{"working and recent: nothing", stage, working(nil), up(Observation{Now: t0, Turn: agent.TurnRunning, Quiet: time.Second}), "", "", StateWorking, ""},
		{"busy: no reminder typed", stage, working(nil), up(Observation{Now: t0, Busy: true, Turn: agent.TurnDone, Quiet: 3 * time.Minute}), "", "", StateWorking, ""},
		{"a recreation request ends the run for a fresh one", stage, working(nil), up(Observation{Now: t0, Turn: agent.TurnDone, Recreate: "go on from step 2"}), "recreate",
			"the agent asked for a fresh session: ended; a fresh one starts with its resume message", StatePending, ""},
		{"past the recreations allowed it blocks", stage, working(func(r *Run) { r.Recreated = MaxRecreations }), up(Observation{Now: t0, Turn: agent.TurnDone, Recreate: "again"}), "write",
			"blocked: its runs asked for a fresh session 4 times; the last asked: again", StateBlocked, ""},
		// K4: a question's round that stops short.
		{"a round that stops short saying where the next starts is delivered", round, working(nil), up(Observation{Now: t0, Confirmed: true, Turn: agent.TurnDone, NextRound: "the cache layer"}), "deliver", "delivered: stopped short; the next round starts: the cache layer", StateDelivered, ""},
		{"a round's file deliverable wins over its note", round, working(nil), up(Observation{Now: t0, Confirmed: true, Turn: agent.TurnDone, NextRound: "x", Delivered: true, What: "conclusion.md written in the place"}), "deliver", "delivered: conclusion.md written in the place", StateDelivered, ""},
		{"a round that needs someone waits, whatever it says of the next", round, working(nil), up(Observation{Now: t0, Confirmed: true, Turn: agent.TurnDone, NextRound: "x", Need: "the logs"}), "write", "waiting: the logs", StateWaiting, ""},
		{"NEXT ROUND: outside a round delivers nothing", stage, working(nil), up(Observation{Now: t0, Confirmed: true, Turn: agent.TurnDone, NextRound: "x", Quiet: time.Second}),
			"write", "idle: " + IdleReason(t0.Add(-time.Second), t0.Add(2*time.Minute-time.Second)), StateWorking, ""},
		// A3: starting.
		{"a transcript found is recorded first", stage, working(func(r *Run) { r.State, r.Agent.Transcript = StateStarting, "" }), Observation{Now: t0, Found: "/t.jsonl", Delivered: true}, "write", "transcript /t.jsonl", StateStarting, ""},
		{"the prompt confirmed before the deliverable", stage, working(func(r *Run) { r.State = StateStarting }), up(Observation{Now: t0, Confirmed: true, Delivered: true, What: "commit"}), "write", "prompt confirmed in the transcript", StateWorking, ""},
		{"a deliverable before the prompt shows: the transcript is read again", stage, working(func(r *Run) { r.State = StateStarting }), up(Observation{Now: t0.Add(time.Second), Delivered: true, What: "commit"}), "", "", StateStarting, ""},
		{"a deliverable, the prompt never shown past the window: delivered, said", stage, working(func(r *Run) { r.State = StateStarting }), up(Observation{Now: t0.Add(time.Minute), Turn: agent.TurnDone, Delivered: true, What: "commit"}), "deliver", "delivered: commit (its prompt never showed in its transcript)", StateDelivered, ""},
		{"a deliverable from an agent gone, prompt never shown: delivered, said", stage, working(func(r *Run) { r.State = StateStarting }), Observation{Now: t0.Add(time.Second), Transcript: true, Exit: &agent.Exit{Status: 0}, Delivered: true, What: "commit"}, "deliver", "delivered: commit (its prompt never showed in its transcript)", StateDelivered, ""},
		{"starting within the window: slow is not failed", stage, working(func(r *Run) { r.State = StateStarting }), Observation{Now: t0.Add(59 * time.Second), Up: true, Screen: &agent.Screen{Busy: true}}, "", "", StateStarting, ""},
		{"starting, a dialog on screen: blocked at once", stage, working(func(r *Run) { r.State = StateStarting }), Observation{Now: t0.Add(time.Second), Up: true, Screen: &agent.Screen{Dialog: true, Words: "Do you trust the files in this folder?"}},
			"write", "blocked: Do you trust the files in this folder?", StateBlocked, ""},
		{"past the window: the prompt is checked and sent again", stage, working(func(r *Run) { r.State = StateStarting }), Observation{Now: t0.Add(time.Minute), Up: true, Screen: &agent.Screen{Ready: true}}, "resend", "", StateStarting, ""},
		{"an operator's agent with no transcript past the window: unknown", stage, working(func(r *Run) { r.State, r.Agent.Pane = StateStarting, "print" }), Observation{Now: t0.Add(time.Minute)}, "write", "no transcript yet", StateUnknown, ""},
		// K6, W2: delivered.
		{"delivered mid-turn: the grace starts", stage, working(nil), up(Observation{Now: t0.Add(time.Minute), Turn: agent.TurnRunning, Delivered: true, What: "commit"}), "write", "deliverable in git; the agent closes its turn", StateWorking, ""},
		{"delivered by a waiting agent mid-turn: at work again in its grace", stage, working(func(r *Run) { r.State, r.Need = StateWaiting, "the API key" }), up(Observation{Now: t0.Add(time.Minute), Turn: agent.TurnRunning, Delivered: true, What: "commit"}), "write", "deliverable in git; the agent closes its turn", StateWorking, ""},
		{"within the grace: nothing", stage, working(func(r *Run) { r.Landing = at(time.Minute) }), up(Observation{Now: t0.Add(119 * time.Second), Turn: agent.TurnRunning, Delivered: true, What: "commit"}), "", "", StateWorking, ""},
		{"past the grace: ended, delivered", stage, working(func(r *Run) { r.Landing = at(time.Minute) }), up(Observation{Now: t0.Add(2 * time.Minute), Turn: agent.TurnRunning, Delivered: true, What: "commit"}), "deliver", "delivered: commit", StateDelivered, ""},
		{"agent gone mid-turn with its deliverable: delivered, no grace", stage, working(nil), Observation{Now: t0, Transcript: true, Turn: agent.TurnRunning, Exit: &agent.Exit{Status: 0}, Delivered: true, What: "commit"}, "deliver", "delivered: commit", StateDelivered, ""},
		{"the deliverable wins over a used-up budget", stage, working(nil), Observation{Now: t0.Add(41 * time.Minute), Delivered: true, What: "commit"}, "deliver", "delivered: commit", StateDelivered, ""},
		// W1: the budget.
		{"budget used up: cut", stage, working(nil), up(Observation{Now: t0.Add(40 * time.Minute)}), "cut", "cut: its budget of 40m0s was used up", StateCut, ""},
		{"three quarters: told once", stage, working(nil), up(Observation{Now: t0.Add(30 * time.Minute), Turn: agent.TurnRunning}), "tell", "three quarters of the budget used: told the agent to finish", StateWorking, BudgetMessage},
		{"three quarters, told already: never told again (W1)", stage, working(func(r *Run) { r.Told = true }), up(Observation{Now: t0.Add(35 * time.Minute), Turn: agent.TurnRunning}), "", "", StateWorking, ""},
		{"three quarters, busy: the state decides", stage, working(nil), up(Observation{Now: t0.Add(31 * time.Minute), Busy: true, Need: "a key", Turn: agent.TurnDone}), "write", "waiting: a key", StateWaiting, ""},
		// Blocked, parked.
		{"blocked by a dialog, answered by hand: works again", stage, working(func(r *Run) { r.Blocked(BlockDialog, DialogReason("trust?")) }),
			up(Observation{Now: t0.Add(time.Minute), Screen: &agent.Screen{Busy: true}, Confirmed: true, Turn: agent.TurnRunning}), "write", "the dialog was answered: prompt confirmed in the transcript", StateWorking, ""},
		{"blocked by a dialog still on screen: stays blocked", stage, working(func(r *Run) { r.Blocked(BlockDialog, DialogReason("trust?")) }),
			up(Observation{Now: t0.Add(time.Minute), Screen: &agent.Screen{Dialog: true}, Confirmed: true}), "", "", StateBlocked, ""},
		{"a blocked record from before blocks were kept: read by its reason", stage, working(func(r *Run) { r.State, r.Reason = StateBlocked, DialogReason("trust?") }),
			up(Observation{Now: t0.Add(time.Minute), Screen: &agent.Screen{Ready: true}, Confirmed: true}), "write", "the dialog was answered: prompt confirmed in the transcript", StateWorking, ""},
		{"blocked by an error, a turn runs again: works again", stage, working(func(r *Run) { r.Blocked(BlockError, "overloaded") }), up(Observation{Now: t0.Add(time.Minute), Turn: agent.TurnRunning}), "write", "the agent works again", StateWorking, ""},
		{"blocked, three quarters of the budget: nothing typed", stage, working(func(r *Run) { r.Blocked(BlockError, "overloaded") }), up(Observation{Now: t0.Add(31 * time.Minute), Turn: agent.TurnError}), "", "", StateBlocked, ""},
		{"a usage limit that names its reset parks the run", stage, working(nil), up(Observation{Now: t0.Add(time.Minute), Turn: agent.TurnError, Limited: true, Reset: t0.Add(time.Hour), ErrorText: "limit"}),
			"write", "parked: the provider's usage limit was reached; flume resumes it once at 2026-01-01 13:00 UTC", StateParked, ""},
		{"parked before its reset: nothing, budget paused", stage, working(func(r *Run) { r.State, r.ParkedUntil = StateParked, at(time.Hour) }), up(Observation{Now: t0.Add(50 * time.Minute), Turn: agent.TurnError, Limited: true}), "", "", StateParked, ""},
		{"parked past its reset: the one follow-up", stage, working(func(r *Run) { r.State, r.ParkedAt, r.ParkedUntil = StateParked, at(time.Minute), at(time.Hour) }),
			up(Observation{Now: t0.Add(61 * time.Minute), Turn: agent.TurnError, Limited: true}), "tell", "usage limit reset: sent the one follow-up to resume", StateWorking, ResumeMessage},
		{"resumed, the resume not in the transcript yet: the old error decides nothing", stage, working(func(r *Run) { r.Resumed, r.ParkedMs = true, time.Hour.Milliseconds() }),
			up(Observation{Now: t0.Add(62 * time.Minute), Turn: agent.TurnError, Limited: true, Reset: t0.Add(time.Hour)}), "", "", StateWorking, ""},
		{"the limit again after the one resume blocks", stage, working(func(r *Run) { r.Resumed, r.ParkedMs = true, time.Hour.Milliseconds() }),
			up(Observation{Now: t0.Add(63 * time.Minute), Turn: agent.TurnError, Limited: true, Resumed: true, Reset: t0.Add(2 * time.Hour), ErrorText: "limit"}),
			"write", "blocked: the provider's usage limit was reached again after the one resume: limit", StateBlocked, ""},
		// A10: whatever ends or stalls a run under way.
		{"the agent exits mid-turn: blocked with its status and last message", stage, working(nil),
			Observation{Now: t0, Transcript: true, Turn: agent.TurnRunning, LastAssistant: "looking at it\nrunning the tests", Exit: &agent.Exit{Status: 0}},
			"end", `blocked: the agent ended before it delivered: it exited with status 0; its last message: "running the tests"`, StateBlocked, ""},
		{"the agent is killed: the signal is its reason", stage, working(nil), Observation{Now: t0, Transcript: true, Exit: &agent.Exit{Signal: 9}},
			"end", "blocked: the agent ended before it delivered: it was killed by signal 9 (killed)", StateBlocked, ""},
		{"its pane is closed by hand", stage, working(func(r *Run) { r.State = StateWaiting }), Observation{Now: t0, Transcript: true, Exit: &agent.Exit{Closed: true}},
			"end", "blocked: the agent ended before it delivered: its pane is gone (closed by hand, or its pane host ended)", StateBlocked, ""},
		{"an agent that exits before its prompt showed never started", stage, working(func(r *Run) { r.State = StateStarting }), Observation{Now: t0.Add(time.Second), Exit: &agent.Exit{Status: 1}},
			"end", "never started: the agent ended before its prompt showed in its transcript: it exited with status 1", StateNeverStarted, ""},
		{"an agent that fails at start: its screen says why (A3, A10)", stage, working(func(r *Run) { r.State = StateStarting }),
			Observation{Now: t0.Add(time.Second), Exit: &agent.Exit{Status: 1}, EndScreen: "Invalid API key / Please run /login"},
			"end", `never started: the agent ended before its prompt showed in its transcript: it exited with status 1; its screen's last lines: "Invalid API key / Please run /login"`, StateNeverStarted, ""},
		{"an agent that exits mid-turn: its screen is its interface, not its reason", stage, working(nil),
			Observation{Now: t0, Transcript: true, Turn: agent.TurnRunning, Exit: &agent.Exit{Status: 3}, EndScreen: "Fake Claude / ❯"},
			"end", "blocked: the agent ended before it delivered: it exited with status 3", StateBlocked, ""},
		{"a pane not open yet within the window: slow, not gone", stage, working(func(r *Run) { r.State = StateStarting }), Observation{Now: t0.Add(time.Second), Exit: &agent.Exit{Closed: true}},
			"", "", StateStarting, ""},
		{"no pane past the window: never started", stage, working(func(r *Run) { r.State = StateStarting }), Observation{Now: t0.Add(time.Minute), Exit: &agent.Exit{Closed: true}},
			"end", "never started: the agent ended before its prompt showed in its transcript: its pane is gone (closed by hand, or its pane host ended)", StateNeverStarted, ""},
		{"a dialog mid-turn blocks with its words, nothing typed", stage, working(nil),
			up(Observation{Now: t0, Turn: agent.TurnRunning, Quiet: 5 * time.Second, Screen: &agent.Screen{Dialog: true, Words: "Do you want to proceed? 1. Yes 2. No"}}),
			"write", "blocked: Do you want to proceed? 1. Yes 2. No", StateBlocked, ""},
		{"a dialog mid-turn answered by hand: works again", stage, working(func(r *Run) { r.Blocked(BlockDialog, DialogReason("Do you want to proceed?")) }),
			up(Observation{Now: t0, Confirmed: true, Turn: agent.TurnRunning, Screen: &agent.Screen{Busy: true}}), "write", "the dialog was answered: prompt confirmed in the transcript", StateWorking, ""},
		{"the place's worktree goes: blocked, nothing started elsewhere", stage, working(nil), up(Observation{Now: t0, Turn: agent.TurnRunning, PlaceGone: "its place's worktree /r/places/fix--a is gone"}),
			"write", "blocked: its place's worktree /r/places/fix--a is gone", StateBlocked, ""},
		{"the place gone, recorded already: nothing more", stage, working(func(r *Run) { r.Blocked(BlockPlace, "gone") }), up(Observation{Now: t0, Turn: agent.TurnRunning, PlaceGone: "gone"}), "", "", StateBlocked, ""},
		{"the place's loss said anew as it changes", stage, working(func(r *Run) { r.Blocked(BlockPlace, "no longer a worktree") }), up(Observation{Now: t0, Turn: agent.TurnRunning, PlaceGone: "gone"}),
			"write", "blocked: gone", StateBlocked, ""},
		{"an ended agent: nothing more", stage, working(func(r *Run) { r.Agent.Ended = true }), Observation{Now: t0.Add(time.Hour)}, "", "", StateWorking, ""},
		// The workspace worker's policy: its turn is its deliverable.
		{"worker: a turn done is delivered", worker, working(nil), up(Observation{Now: t0, Confirmed: true, Turn: agent.TurnDone}), "deliver", "delivered: its turn ended", StateDelivered, ""},
		{"worker: a need ends the run", worker, working(nil), up(Observation{Now: t0, Confirmed: true, Turn: agent.TurnDone, Need: "the key"}), "end", "blocked: the agent needs: the key", StateBlocked, ""},
		{"worker: cut for length gets the one recovery prompt as a stage does", worker, working(nil), up(Observation{Now: t0, Confirmed: true, Turn: agent.TurnLength}), "tell", "reply cut for length: sent the one recovery prompt", StateWorking, LengthMessage},
		{"worker: a usage limit parks it as a stage", worker, working(nil), up(Observation{Now: t0, Confirmed: true, Turn: agent.TurnError, Limited: true, Reset: t0.Add(time.Hour)}),
			"write", "parked: the provider's usage limit was reached; flume resumes it once at 2026-01-01 13:00 UTC", StateParked, ""},
		{"worker: exits mid-turn like any run", worker, working(nil), Observation{Now: t0, Transcript: true, Turn: agent.TurnRunning, Exit: &agent.Exit{Status: 2}},
			"end", "blocked: the agent ended before it delivered: it exited with status 2", StateBlocked, ""},
		{"worker: quiet past its idle limit is cut", worker, working(func(r *Run) { r.StuckAfterMs = 2000 }), up(Observation{Now: t0, Turn: agent.TurnRunning, Quiet: 3 * time.Second}),
			"cut", "cut: its transcript was quiet past its limit of 2s", StateCut, ""},
		{"worker: past its maximum runtime is cut, never told", worker, working(nil), up(Observation{Now: t0.Add(40 * time.Minute), Turn: agent.TurnRunning}),
			"cut", "cut: its maximum runtime of 40m0s was used up", StateCut, ""},
		{"worker: three quarters tells nothing", worker, working(nil), up(Observation{Now: t0.Add(31 * time.Minute), Turn: agent.TurnRunning}), "", "", StateWorking, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := c.r.clone()
			r, mv := Decide(c.r, c.o, c.pol)
			if !reflect.DeepEqual(in, c.r) {
				t.Fatalf("Decide changed the run it was given:\n%+v\nwas\n%+v", c.r, in)
			}
			kind := ""
			switch {
			case mv.Resend:
				kind = "resend"
			case mv.Delivered:
				kind = "deliver"
			case mv.Recreate:
				kind = "recreate"
			case mv.End == SnapshotEnd:
				kind = "end"
			case mv.End == SnapshotCut:
				kind = "cut"
			case mv.Tell != "":
				kind = "tell"
			case mv.Write != "":
				kind = "write"
			}
			if kind != c.kind || mv.Write != c.write || r.State != c.state {
				t.Fatalf("move %s %q, state %q; want %s %q, %q", kind, mv.Write, r.State, c.kind, c.write, c.state)
			}
			if mv.Tell != c.tell {
				t.Errorf("tells %q, want %q", mv.Tell, c.tell)
			}
			// A7: the run's quiet counts from a follow-up typed now.
			if a := r.Agent; mv.Tell != "" && (a.ToldAt == nil || !a.ToldAt.Equal(c.o.Now) || a.Tells != c.r.Agent.Tells+1) {
				t.Errorf("a follow-up typed at %s recorded as told at %v, tells %d", c.o.Now, a.ToldAt, a.Tells)
			}
			if r.State == StateBlocked && r.Block == "" {
				t.Error("blocked with no block kind: nothing would know when it is gone")
			}
			if c.o.Screen != nil && c.o.Screen.Dialog && mv.Tell != "" {
				t.Error("types into a dialog (X3)")
			}
			if strings.Contains(c.name, "exits") || strings.Contains(c.name, "killed") || strings.Contains(c.name, "closed") {
				if r.Agent.Exit == nil || !reflect.DeepEqual(*r.Agent.Exit, *c.o.Exit) {
					t.Errorf("the agent's exit is not recorded: %+v", r.Agent.Exit)
				}
			}
		})
	}
}

// TestResentDecidesWhatTheScreenShowed_A3: a prompt checked on screen and
// sent once more, or not, and what the run then records.
func TestResentDecidesWhatTheScreenShowed_A3(t *testing.T) {
	starting := working(func(r *Run) { r.State, r.Agent.Transcript = StateStarting, "" })
	for _, c := range []struct {
		name  string
		res   agent.Resent
		write string
		state string
	}{
		{"exited", agent.Resent{Exited: true}, "never started: agent exited", StateNeverStarted},
		{"busy: slow is not failed", agent.Resent{Busy: true}, "", StateStarting},
		{"a dialog: blocked, nothing typed", agent.Resent{Blocked: "Do you trust"}, "blocked: Do you trust", StateBlocked},
		{"sent twice already", agent.Resent{GaveUp: true}, "never started", StateNeverStarted},
		{"sent, no transcript yet: unknown", agent.Resent{Sent: true}, "prompt not confirmed within 1m0s; sent again", StateUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, mv := Resent(starting, c.res, Observation{Now: t0.Add(time.Minute)}, stage)
			if mv.Write != c.write || r.State != c.state {
				t.Fatalf("write %q state %q; want %q %q", mv.Write, r.State, c.write, c.state)
			}
			if c.res.Sent && (r.Agent.Sends != 2 || !r.Agent.SentAt.Equal(t0.Add(time.Minute))) {
				t.Errorf("sends %d at %v", r.Agent.Sends, r.Agent.SentAt)
			}
			if starting.Agent.Sends != 1 {
				t.Error("Resent changed the run it was given")
			}
		})
	}
}
