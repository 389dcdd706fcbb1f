package run

import (
	"fmt"
	"strings"
	"time"

	"github.com/git-flume/git-flume/agents"
)

// Agent is the record of one agent program started for a run: what it is,
// where it runs, its pinned session and transcript, and whether flume has
// ended it. The stage record and the workspace worker record carry it with
// the same JSON.
type Agent struct {
	Program string `json:"program"`
	Format  string `json:"format"`
	Pattern string `json:"pattern"` // where its transcript is (a glob template)
	Session string `json:"session"` // the pinned session id
	Pane    string `json:"pane"`    // the pane's name in its host; "print" when the operator runs it
	// PaneHost is the pane host the agent runs in: "tmux" or "herdr"
	// ("" in records older than it: tmux).
	PaneHost   string    `json:"paneHost,omitempty"`
	Host       string    `json:"host"`
	PID        int       `json:"pid,omitempty"`
	PromptFile string    `json:"promptFile"`
	Transcript string    `json:"transcript,omitempty"`
	Started    time.Time `json:"started"`
	SentAt     time.Time `json:"sentAt"`
	Sends      int       `json:"sends"`
	// Sandbox is what holds what the agent writes (A12): "landlock", or
	// "off: " and why it runs without one; "" in records older than it.
	Sandbox string `json:"sandbox,omitempty"`
	// Layers are the sandbox's layers it ran behind (A13), outermost
	// first: "own view, seccomp, Landlock".
	Layers string `json:"layers,omitempty"`
	// Ended reports the agent ended and verified gone (X5), by flume or by
	// itself.
	Ended bool `json:"ended"`
	// Tells are follow-ups flume typed after the prompt (the budget's
	// warning, a reminder, the resume after a usage limit, the recovery
	// after a reply cut for length), confirmed or not; ToldAt is when it
	// typed the last. A run's quiet counts from it too (A7): a follow-up
	// after hours parked is not hours of quiet.
	Tells  int        `json:"tells,omitempty"`
	ToldAt *time.Time `json:"toldAt,omitempty"`
	// Exit is how the agent ended by itself, when it did (A10).
	Exit *agent.Exit `json:"exit,omitempty"`
	// Resumed: the agent went on with an earlier run's session (reopen),
	// whose transcript it shares; UsageBefore is what that transcript
	// counted as it began, which this run did not spend (W6).
	Resumed     bool         `json:"resumed,omitempty"`
	UsageBefore *agent.Usage `json:"usageBefore,omitempty"`
}

// EventsFile is where the agent's own hooks record its events (A11):
// beside its prompt, "" for a record with no prompt file of flume's.
func (a *Agent) EventsFile() string {
	if base, ok := strings.CutSuffix(a.PromptFile, ".prompt"); ok && base != "" {
		return base + ".events.jsonl"
	}
	return ""
}

// Inbox is where the agent's git-flume, in a sandbox, hands the
// delegation verbs to its place's watcher (A12): beside its prompt, made
// only for a role that delegates.
func (a *Agent) Inbox() string {
	if base, ok := strings.CutSuffix(a.PromptFile, ".prompt"); ok && base != "" {
		return base + ".inbox"
	}
	return ""
}

// Printed reports an agent the operator runs from a printed command: flume
// never types into it nor reads its pane.
func (a *Agent) Printed() bool { return a.Pane == "print" }

// ProgramOf is what reading a started agent needs of its program: where its
// transcript is and in which format, as recorded when it started.
func (a *Agent) ProgramOf() agent.Program {
	return agent.Program{Name: a.Program, Format: a.Format, Transcript: a.Pattern}
}

// Life is where a run stands: its state and why, the one follow-up of each
// kind it got, its timers. A stage record carries it inline (its JSON is
// the stage's own fields); the worker record under "life".
type Life struct {
	State   string     `json:"state"`
	Started *time.Time `json:"started,omitempty"`
	Ended   *time.Time `json:"ended,omitempty"`
	Need    string     `json:"need,omitempty"`
	Reason  string     `json:"reason,omitempty"`
	// Block is what blocked the run (BlockDialog, BlockError, …), so the
	// engine knows when that evidence is gone; "" in records made before
	// it was kept.
	Block string `json:"block,omitempty"`
	// Landing is when the deliverable was first seen while the agent's
	// turn still ran: it gets a grace to close its turn (and report).
	Landing *time.Time `json:"landing,omitempty"`
	// LengthPrompted and Reminded record the one follow-up of each kind
	// (A8): a recovery prompt after a reply cut for length, a reminder
	// after a turn that ended with neither deliverable nor need.
	LengthPrompted bool `json:"lengthPrompted,omitempty"`
	Reminded       bool `json:"reminded,omitempty"`
	// BudgetMs is the run's time budget (W1); Told records the one message
	// sent at 75% of it.
	BudgetMs int64 `json:"budgetMs,omitempty"`
	Told     bool  `json:"told,omitempty"`
	// ParkedAt and ParkedUntil are when a usage limit parked the run and
	// the reset it named; ParkedMs is the time it spent parked, which its
	// budget does not count; Resumed records the one follow-up after a
	// reset.
	ParkedAt    *time.Time `json:"parkedAt,omitempty"`
	ParkedUntil *time.Time `json:"parkedUntil,omitempty"`
	ParkedMs    int64      `json:"parkedMs,omitempty"`
	Resumed     bool       `json:"resumed,omitempty"`
	// StuckAfterMs is how long this run may be quiet before it is stuck
	// (A7); 0 in records made before it was kept, which use the policy's.
	StuckAfterMs int64 `json:"stuckAfterMs,omitempty"`
	// Recreated counts the runs ended because they asked for a fresh
	// session (RECREATE:); a few are allowed, never a loop.
	Recreated int `json:"recreated,omitempty"`
}

// Run is a run as Decide reads and returns it: where it stands and its
// agent (nil before one started).
type Run struct {
	Life
	Agent *Agent
}

// clone is r with its own copy of the agent record, so a decision never
// writes into the run it was given.
func (r Run) clone() Run {
	if r.Agent != nil {
		a := *r.Agent
		if a.Exit != nil {
			x := *a.Exit
			a.Exit = &x
		}
		if a.ToldAt != nil {
			t := *a.ToldAt
			a.ToldAt = &t
		}
		r.Agent = &a
	}
	return r
}

// Running reports a run whose agent flume started and has not seen end.
func (r Run) Running() bool { return r.Agent != nil && !r.Agent.Ended }

// States of a run (S1). A stage adds its own around them (pending before a
// run, delivered and landed after).
const (
	StateStarting     = "starting"
	StateUnknown      = "unknown"
	StateWorking      = "working"
	StateWaiting      = "waiting"
	StateStuck        = "stuck"
	StateDelivered    = "delivered"
	StateNeverStarted = "never-started"
	StateCut          = "cut"
	StateBlocked      = "blocked"
	// StateParked is a run whose provider refused more work until a reset:
	// flume resumes it once, after the reset.
	StateParked = "parked"
	// StatePending is a run not started yet: a stage waiting for its
	// agent, or one a recreation ended for a fresh one.
	StatePending = "pending"
)

// What blocks a run (Life.Block).
const (
	BlockDialog   = "dialog"   // a screen that is not the agent's ready composer (X3)
	BlockError    = "error"    // a turn that ended with an error (A8)
	BlockLength   = "length"   // a reply cut for length again after the recovery prompt (A8)
	BlockReminded = "reminded" // a turn that ended again with neither deliverable nor need after the reminder (A8)
	BlockReady    = "ready"    // readying failed (L2)
	BlockRollback = "rollback" // rolled back: waits for retry (W5)
	BlockStopped  = "stopped"  // its agent was stopped (A5): waits for retry
	// BlockRecreated: its runs asked for a fresh session more often than
	// MaxRecreations allows.
	BlockRecreated = "recreated"
	// BlockExited: the agent ended by itself (exited, killed, its pane
	// closed) before it delivered (A10).
	BlockExited = "exited"
	// BlockPlace: the place's worktree went away under the agent (A10).
	BlockPlace = "place"
	// BlockRole: the stage's role limits tools or paths and its agent
	// program cannot be held to them (A9).
	BlockRole = "role"
	// BlockNeed: a run nobody answers (the workspace worker) stopped with
	// a need.
	BlockNeed = "need"
)

// Active reports a state whose agent is expected to be at work.
func Active(state string) bool {
	switch state {
	case StateStarting, StateUnknown, StateWorking, StateWaiting, StateStuck, StateParked:
		return true
	}
	return false
}

// Starting reports a state whose prompt is not confirmed yet.
func Starting(state string) bool { return state == StateStarting || state == StateUnknown }

// BlockedBy is what blocked l, "" when it is not blocked.
func (l Life) BlockedBy() string {
	if l.State != StateBlocked {
		return ""
	}
	if l.Block == "" && strings.HasPrefix(l.Reason, DialogReason("")) {
		return BlockDialog // a record made before blocks were kept
	}
	return l.Block
}

// Observed reports a run the engine watches: an active one, or one blocked
// after its run started while what blocked it may go (a dialog answered by
// hand, a turn running again) or its deliverable may still show. A run
// rolled back waits for retry (W5); one whose place was not ready never
// started; one whose agent ended, or whose place went, has nothing left
// that could move it but its deliverable, which the caller may still read.
func (l Life) Observed(base string) bool {
	if Active(l.State) {
		return true
	}
	return l.State == StateBlocked && base != "" && l.Started != nil &&
		l.Block != BlockRollback && l.Block != BlockReady
}

// Blocked marks l blocked by kind, with the reason status shows.
func (l *Life) Blocked(kind, reason string) {
	l.State, l.Block, l.Reason = StateBlocked, kind, reason
}

// DialogReason is a blocked run's reason for a screen that is not the
// agent's ready composer, with the screen's words.
func DialogReason(words string) string {
	return "the screen is not the agent's ready composer: " + words
}

// PermissionReason is a blocked run's reason for a permission its agent
// asked for, in the program's own words from its hooks (A11).
func PermissionReason(words string) string {
	return "the agent waits for a permission: " + words
}

// idlePrefix opens the reason of a working run whose turn ended with
// neither its deliverable nor a need, until the reminder goes (A8).
const idlePrefix = "its turn ended at "

// IdleReason says a run's turn ended at ended with neither the
// deliverable nor a need, and when the one reminder goes.
func IdleReason(ended, remind time.Time) string {
	return fmt.Sprintf("%s%s with neither the deliverable nor NEEDS:; the one reminder goes at %s",
		idlePrefix, ended.Local().Format("15:04:05"), remind.Local().Format("15:04:05"))
}

// InterruptedReason says a run's turn was stopped by a person at ended
// (Esc, a permission refused), and that it waits for a tell.
func InterruptedReason(ended time.Time) string {
	return fmt.Sprintf("%s%s, stopped by a person (Esc, or a permission refused): it waits for git flume tell; no reminder goes",
		idlePrefix, ended.Local().Format("15:04:05"))
}

// Messages a run's agent may be told, each at most once.
const (
	// LengthMessage is the one recovery prompt after a reply cut for
	// length (A8).
	LengthMessage = "Your last reply was cut off for length. Continue from where it stopped, in shorter steps; commit what is done."
	// ResumeMessage is the one follow-up once a usage limit has reset.
	ResumeMessage = "Your usage limit has reset. Continue from where you stopped; commit what is done."
	// BudgetMessage is the one message at 75% of the budget (W1): land
	// softly, never start anew.
	BudgetMessage = "You have used three quarters of this stage's time budget. Start no new unit of work: finish the one in hand, commit it, and close with your STAGE REPORT."
	// RecreatedNote begins what a run started for a recreated session is
	// told after its prompt.
	RecreatedNote = "This is a fresh session: the one before it asked for it and left you this message: "
)

// MaxRecreations is how many times a stage's runs may ask for a fresh
// session before it blocks: recreation is a way on, never a loop.
const MaxRecreations = 3
