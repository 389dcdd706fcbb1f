package request

import (
	"time"

	"github.com/git-flume/git-flume/agents/run"
)

// Phases of a workspace request in one member (P3, P5). Each verb moves
// every member from one phase to the next, one member at a time; a crash
// between two members leaves them in neighbouring phases, which the same
// verb (or reconcile, for an intent) completes.
const (
	PhaseAllocating = "allocating" // its record exists; its worktree may not
	PhaseWorking    = "working"    // the worker agent was started
	PhaseChecked    = "checked"    // the worker's candidate passed the task checks
	PhaseStaging    = "staging"    // intent: the integration worktree is being made
	PhaseStaged     = "staged"     // the integration worktree holds the tip
	PhaseValidated  = "validated"  // the tip passed the final checks
	PhaseFailed     = "failed"     // a check failed or the worker did not deliver
	PhaseBlocked    = "blocked"    // the worker stopped with a need or an error
	PhaseAborted    = "aborted"    // stopped by abort; all git work retained
	PhaseCleaned    = "cleaned"    // promoted, and its owned resources removed
	PhaseManual     = "manual"     // an interrupted step left evidence a person must judge
	PhaseDone       = "done"       // direct work: every task's worker delivered and ended
)

// Record is a member's record of a workspace request (kind "workspace",
// schema 1), at refs/flume/workspaces/<id> in that member. The promotion
// engine reads and writes the same record; a record it made for a bare
// promotion has no phase.
type Record struct {
	Schema int    `json:"schema"`
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Member string `json:"member"`
	// Host owns the record: only it writes it (R7).
	Host string `json:"host,omitempty"`
	// Root is the workspace root, Repository this member's path.
	Root       string   `json:"root,omitempty"`
	Repository string   `json:"repository,omitempty"`
	Request    *Request `json:"request,omitempty"`
	Phase      string   `json:"phase,omitempty"`
	// Reason says why a member failed, was blocked or needs a person.
	Reason string `json:"reason,omitempty"`

	// Branch is the member's main branch; Base is where it was when the
	// request started, Tip the checked commit it is promoted to.
	Branch string `json:"branch"`
	Base   string `json:"base"`
	Tip    string `json:"tip"`
	// Pinned is the root package.json test script at Base (P4), if any.
	Pinned *string `json:"pinnedTestScript,omitempty"`
	// Inputs are the request's private input copies (P2), the same in
	// every member.
	Inputs map[string]Input `json:"inputs,omitempty"`
	Worker *Worker          `json:"worker,omitempty"`
	Limits Limits           `json:"limits"`

	// WorkerTree and IntegrationTree are the owned worktrees.
	WorkerTree      *Tree     `json:"workerTree,omitempty"`
	IntegrationTree *Tree     `json:"integrationTree,omitempty"`
	Candidate       *Identity `json:"candidate,omitempty"`
	Staged          *Identity `json:"staged,omitempty"`
	Checks          []Result  `json:"checks,omitempty"`
	FinalChecks     []Result  `json:"finalChecks,omitempty"`

	// Direct work (mode "direct"): Task is the index of the task whose
	// worker runs or ran last, Tasks what each ended task's worker left;
	// Start is the checkout as the request found it, TaskStart as the
	// current task's worker found it, Report what became of it once the
	// request ended.
	Task      int          `json:"task,omitempty"`
	Tasks     []TaskResult `json:"tasks,omitempty"`
	Start     *Checkout    `json:"start,omitempty"`
	TaskStart *Checkout    `json:"taskStart,omitempty"`
	Report    *Report      `json:"report,omitempty"`

	// State is the promotion's: pending, intent, promoted or manual.
	State   string   `json:"state,omitempty"`
	Receipt *Receipt `json:"receipt,omitempty"`
	Manual  string   `json:"manual,omitempty"`
}

// Receipt proves a member moved: from its base to its tip, verified
// against the live branch.
type Receipt struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	At   time.Time `json:"at"`
}

// Identity is a worktree's exact state as a caller confirms it with
// --expected (P5): its branch, commit, index tree and committed tree.
type Identity struct {
	Branch        string `json:"branch"`
	Commit        string `json:"commit"`
	IndexTree     string `json:"indexTree"`
	CommittedTree string `json:"committedTree"`
}

// Tree is an owned worktree: its path and branch (short name).
type Tree struct {
	Path   string `json:"path"`
	Branch string `json:"branch"`
}

// Input is a private read-only copy of an input file and its content id.
type Input struct {
	Source string `json:"source"`
	Copy   string `json:"copy"`
	ID     string `json:"id"`
}

// Worker is the request's one worker agent (P3): the run lifecycle's agent
// record (the same JSON a stage's agent has) and where its run stands,
// decided by that one lifecycle (A10).
type Worker struct {
	run.Agent
	Home string `json:"home,omitempty"`
	// Life is where the worker's run stands; records made before it was
	// kept have none (see run).
	Life run.Life `json:"life"`
	// Confirmed and Need say, for readers of the request's status, whether
	// the worker's prompt showed in its transcript and what it stopped
	// needing; Life holds them for the lifecycle.
	Confirmed bool   `json:"confirmed"`
	Need      string `json:"need,omitempty"`
}

// run is the worker's run as the lifecycle reads it. A record made before
// Life was kept reads as starting, or working once its prompt was
// confirmed.
func (w *Worker) Run(l Limits) run.Run {
	life := w.Life
	if life.State == "" {
		life.State = run.StateStarting
		if w.Confirmed {
			life.State = run.StateWorking
		}
	}
	started := w.Started
	life.Started, life.BudgetMs, life.StuckAfterMs = &started, l.MaxMs, l.IdleMs
	a := w.Agent
	return run.Run{Life: life, Agent: &a}
}

// withRun is the worker as run r leaves it.
func (w Worker) WithRun(r run.Run) Worker {
	w.Agent, w.Life = *r.Agent, r.Life
	switch r.State {
	case run.StateStarting, run.StateUnknown, run.StateNeverStarted:
	case run.StateBlocked:
		w.Confirmed = w.Confirmed || r.Block != run.BlockDialog
	default:
		w.Confirmed = true
	}
	w.Need = r.Need
	return w
}

// Limits bound the worker (the seed's childMaxMs and childIdleMs): the
// maximum runtime does not renew; the idle limit renews whenever the
// transcript grows.
type Limits struct {
	MaxMs  int64 `json:"maxMs"`
	IdleMs int64 `json:"idleMs"`
}

// Result is one check's outcome.
type Result struct {
	Repository string   `json:"repository"`
	Command    string   `json:"command"`
	Args       []string `json:"args"`
	Exit       int      `json:"exit"`
	// Tail is the last lines of its output; Log the whole of it.
	Tail string `json:"tail,omitempty"`
	Log  string `json:"log,omitempty"`
	// Refused says why the check was rejected whatever its exit (a
	// changed pinned script, state left dirty, a changed input).
	Refused string `json:"refused,omitempty"`
}

// OK reports whether the check passed.
func (r Result) OK() bool { return r.Exit == 0 && r.Refused == "" }

// TaskResult is what one task of direct work ended with: its worker's
// session and its last message (a text task's answer, a changeset task's
// summary), cut to MaxAnswer bytes.
type TaskResult struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Program string `json:"program"`
	Session string `json:"session"`
	Answer  string `json:"answer,omitempty"`
	// Wrote says how a text task, which only reads, changed the
	// checkouts while it ran: a branch moved, files changed.
	Wrote []string `json:"wrote,omitempty"`
}

// MaxAnswer bounds the last message a task result keeps.
const MaxAnswer = 8 << 10

// Checkout is a selected checkout as direct work found it: its branch
// (short name), commit, the paths dirty in it and the tree of its files as
// they were (tracked and untracked, through a throwaway index).
type Checkout struct {
	Branch string   `json:"branch"`
	Commit string   `json:"commit"`
	Dirty  []string `json:"dirty,omitempty"`
	Tree   string   `json:"tree"`
}

// Report is what direct work did to one checkout, from its start to its
// end: a write request's change report (commits, files, what is left
// uncommitted), or a read request's stale-read warning when the checkout
// changed while it was being read.
type Report struct {
	Branch string `json:"branch"`
	From   string `json:"from"`
	To     string `json:"to"`
	// Commits are the newest commits from..to (MaxReportLines at most),
	// Files the paths they change, with their status letter.
	Commits []string `json:"commits,omitempty"`
	Files   []string `json:"files,omitempty"`
	// Dirty is what is left uncommitted; DirtyBefore what already was when
	// the request started.
	Dirty       []string `json:"dirty,omitempty"`
	DirtyBefore []string `json:"dirtyBefore,omitempty"`
	// Note says what is out of the ordinary: the branch was switched, or
	// from is no ancestor of to (history rewritten).
	Note string `json:"note,omitempty"`
	// Stale warns a read request that the checkout changed under it.
	Stale string `json:"stale,omitempty"`
}

// MaxReportLines bounds a report's commits and files.
const MaxReportLines = 50
