package record

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/refs"
)

// PlacePrefix holds one record per place.
const PlacePrefix = "refs/flume/places/"

// PlacesDir is the folder, directly under the main checkout, that holds
// every place's worktree.
const PlacesDir = "places"

// Phases of a place's life.
const (
	// PhaseMaking: the record exists, the worktree may not yet. A launch
	// killed here is cleaned up by the next command (see Reconcile).
	PhaseMaking = "making"
	// PhaseMade: worktree and branch exist; stages run.
	PhaseMade = "made"
	// PhaseTidied: worktree removed and branch judged; the record stays as
	// the place's history.
	PhaseTidied = "tidied"
)

// Stage states shown by status (S1). A stage no agent has started yet is
// "pending".
const StagePending = run.StatePending

// StateLanded is a submit stage's delivery (S1): its branch landed on its
// target. Every other state, what blocks a stage and the messages its
// agent may be told are the run lifecycle's own (agents/run): one
// spelling each.
const StateLanded = "landed"

// Place is the record at refs/flume/places/<kind>--<name> (schema 1).
type Place struct {
	Schema int    `json:"schema"`
	Kind   string `json:"kind"` // always "place"

	ID        string `json:"id"` // <kind>--<name>
	PlaceKind string `json:"placeKind"`
	Name      string `json:"name"`
	Repo      string `json:"repo"` // the main checkout
	Path      string `json:"path"`
	Branch    string `json:"branch"` // short name: <kind>/<name>
	Base      string `json:"base"`
	Target    string `json:"target"`
	// ConfigAt is the commit its .flume/config (kinds, roles, prompts,
	// steps, notifier) is read from (A13): its target's tip at launch, or
	// its commissioner's ConfigAt for a delegated place; never a commit of
	// an agent's branch that --from or a delegation starts it from. A
	// record older than it has none: ConfigRev is then its base.
	ConfigAt string `json:"configAt,omitempty"`
	Brief    string `json:"brief"`
	Agent    string `json:"agent,omitempty"`
	// Pane is where the place's agents run (tmux, herdr or print), as
	// chosen at launch; "" means each command's own default. Every stage
	// starts there, whichever shell starts it.
	Pane    string    `json:"pane,omitempty"`
	Host    string    `json:"host"`
	Created time.Time `json:"created"`
	Phase   string    `json:"phase"`
	// Launcher is the launching process while the place is being made.
	Launcher *Proc `json:"launcher,omitempty"`

	Stages  []StageRecord `json:"stages"`
	Current int           `json:"current"` // index into Stages

	Ready *ReadyResult `json:"ready,omitempty"`
	// Run is what the place was given to run: its leased
	// ports, its env files; nil when its repository declares none.
	Run *RunSetup `json:"run,omitempty"`
	// Watcher is the process that keeps the place's timers (A3 unknown
	// starts, A7 stuck): its lease, good while it runs.
	Watcher *Proc `json:"watcher,omitempty"`

	Dropped *time.Time `json:"dropped,omitempty"`
	// Kept says why the last tidy kept the worktree or branch.
	Kept string `json:"kept,omitempty"`
	// Tidied records what tidying removed.
	Tidied *TidyRecord `json:"tidied,omitempty"`

	// Delegation links a place launched from inside another:
	// Parent, in the child's record, is the commissioner and the state
	// it delegated from; Children, in the commissioner's, are the places
	// it delegated, in order. Both are written in the child's first
	// transaction.
	Parent   *Delegation `json:"parent,omitempty"`
	Children []string    `json:"children,omitempty"`

	// Fingerprint is what the conflict radar knows of the place's change:
	// the files and base lines it touches, its commits and
	// its uncommitted work, taken on this host and shared by sync. It is
	// untrusted like the rest: the radar uses it only when it validates.
	Fingerprint *Fingerprint `json:"fingerprint,omitempty"`

	// Runner names the runner a launch --on started this place through
	// (issue 45), "" for a place launched on its own host.
	Runner string `json:"runner,omitempty"`
	// Adopts is the place of a lost host this one carries on (M5): the
	// old place's run is lost, for the reason given.
	Adopts *Adoption `json:"adopts,omitempty"`
}

// Adoption is a place started again elsewhere from the work its lost
// host last shared (M5).
type Adoption struct {
	Place string    `json:"place"`
	Host  string    `json:"host"`
	Work  string    `json:"work"` // the commit of refs/flume-work/<place> it started from
	Why   string    `json:"why"`
	At    time.Time `json:"at"`
	By    string    `json:"by"` // the host that adopted it
}

// Proc is a process on a host.
type Proc struct {
	PID  int    `json:"pid"`
	Host string `json:"host"`
	// Start is its start time as its host's kernel counts it: with the
	// pid it names one process, never a later one given the same pid
	// (pids wrap on a busy host, and start again after a reboot: a lease
	// that named a dead watcher read as held for ever). Empty in records
	// of earlier versions: the pid alone then.
	Start string `json:"start,omitempty"`
}

// Alive reports whether the process runs, as host sees it: another
// host's process is taken as alive, for its own host to judge.
func (p *Proc) Alive(host string) bool {
	alive := refs.ProcessAlive(p.Host, p.PID, host)
	if !alive || p.Host != host || p.Start == "" {
		return alive // another host's, or a record of an earlier version
	}
	start, ok := proc.Started(p.PID)
	return ok && start == p.Start
}

// ResumeFrom is an earlier agent run of a stage whose session a later run
// resumes: its program, its session and its transcript.
type ResumeFrom struct {
	Program    string `json:"program"`
	Session    string `json:"session"`
	Transcript string `json:"transcript"`
}

// StageRecord is one stage of a place.
type StageRecord struct {
	Name        string `json:"name"`
	Prompt      string `json:"prompt"`
	Deliverable string `json:"deliverable"`
	// Life is where the stage's current run stands (its state, need,
	// reason, timers and follow-ups): the one run lifecycle's record,
	// inline, so the stage's JSON keeps its own fields (A10).
	run.Life
	// Base is the branch head when the stage began: a commit deliverable
	// is a commit beyond it.
	Base string `json:"base,omitempty"`
	// Delivered says what ended the stage, read at one commit (K6).
	Delivered string `json:"delivered,omitempty"`
	// At is the commit the deliverable was read at.
	At string `json:"at,omitempty"`
	// Tasks counts a change's tasks at the branch head.
	Tasks *TaskCount `json:"tasks,omitempty"`
	// Runs counts the agents started for this stage (retry, go-on).
	Runs  int        `json:"runs"`
	Agent *run.Agent `json:"agent,omitempty"`
	// Earlier are the agents of this stage's earlier runs, oldest first:
	// each is what it spent (W6), and its transcript is never claimed by
	// a later run.
	Earlier []run.Agent `json:"earlier,omitempty"`
	// Report is the agent's closing STAGE REPORT (W2); ReportMissing
	// flags a stage that ended without one.
	Report        *Report `json:"report,omitempty"`
	ReportMissing bool    `json:"reportMissing,omitempty"`
	// Role is the role the stage's declaration names (A9), read from
	// .flume/roles/<role>.md at the place's base.
	Role string `json:"role,omitempty"`
	// Start is the snapshot of a work tree that was dirty when the stage
	// started (W3); rollback restores it over Base.
	Start *Snapshot `json:"start,omitempty"`
	// Preexisting is the content id (contentID) of the stage's file
	// deliverable as its current run found it in the place, "" when it
	// was not there: that content delivers nothing (K4).
	Preexisting string `json:"preexisting,omitempty"`
	// NextRound is where a question's next round starts, as a round that
	// stopped short said it (K4); go-on tells it to the next round.
	NextRound string `json:"nextRound,omitempty"`
	// Resume names the earlier run whose session the stage's next run
	// goes on with (reopen); the run that starts takes it.
	Resume *ResumeFrom `json:"resume,omitempty"`
	// Starter is the command that set the stage pending to start it
	// itself (retry, go on, reopen): while it lives no other process
	// starts the stage, so the fresh agent gets the environment of the
	// command that asked for it, never a watcher's from the launch (A1).
	Starter *Proc `json:"starter,omitempty"`
	// Followup is what the stage's next run is told after its prompt: a
	// commissioner's reason to reopen or unblock it, or the resume message
	// a run that asked to be recreated left. The run that
	// starts takes it.
	Followup string `json:"followup,omitempty"`
	// Accepted are the heads of delegated places accepted onto the
	// place's branch during this stage: their commits (and an accept's
	// merge of them) are never this stage's deliverable.
	Accepted []string `json:"accepted,omitempty"`
	// Snapshots are the work tree's states flume kept as the stage ended,
	// was cut, retried or rolled back with uncommitted changes (W3).
	Snapshots []Snapshot `json:"snapshots,omitempty"`
}

// Run is the stage's current run as the lifecycle reads it.
func (st *StageRecord) Run() run.Run { return run.Run{Life: st.Life, Agent: st.Agent} }

// SetRun records run r as the stage's current run.
func (st *StageRecord) SetRun(r run.Run) { st.Life, st.Agent = r.Life, r.Agent }

// Snapshot is a work tree's state kept in git (W3): a commit of its
// tracked and untracked files (ignored ones aside) whose parent is the
// branch head then, at Ref, and the patch from the stage's base to it.
type Snapshot struct {
	Why    string `json:"why"`
	Ref    string `json:"ref"`
	Commit string `json:"commit"`
	Tree   string `json:"tree"`
	Head   string `json:"head"`
	Diff   string `json:"diff"`
}

// TaskCount is how many of a change's tasks are ticked.
type TaskCount struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// ReadyResult is the outcome of the last readying (L2).
type ReadyResult struct {
	OK    bool   `json:"ok"`
	Steps int    `json:"steps"`
	Step  string `json:"step,omitempty"` // the failing step
	Exit  int    `json:"exit,omitempty"`
	Tail  string `json:"tail,omitempty"` // its last 40 lines
	// Boundary is what the steps ran behind where the place's tree is an
	// agent's (A13): its layers, or "off: " and why; empty otherwise.
	Boundary string `json:"boundary,omitempty"`
	// Running is set while steps run, with the process running them.
	Running *Proc `json:"running,omitempty"`
}

// TidyRecord is what tidying did.
type TidyRecord struct {
	At         time.Time `json:"at"`
	Reason     string    `json:"reason"` // "landed" or "dropped"
	BranchHead string    `json:"branchHead,omitempty"`
}

// PlaceID turns a PLACE argument (<kind>--<name> or <kind>/<name>) into a
// place id, validating both parts (R6).
func PlaceID(arg string) (string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		kind, name, ok = strings.Cut(arg, "--")
	}
	if !ok {
		return "", &refs.NameError{What: "place", Value: arg, Reason: "want <kind>--<name> or <kind>/<name>"}
	}
	if err := refs.ValidateName("kind", kind); err != nil {
		return "", err
	}
	if err := refs.ValidateName("name", name); err != nil {
		return "", err
	}
	return kind + "--" + name, nil
}

// PlaceRef is the ref of a place's record.
func PlaceRef(id string) string { return PlacePrefix + id }

// NotFoundError is a PLACE argument that names no place.
type NotFoundError struct{ Place string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("no place %s", e.Place) }

// ReadPlace reads a place's record.
func ReadPlace(ctx context.Context, s *refs.Store, id string) (*refs.Record, *Place, error) {
	rec, err := s.Read(ctx, PlaceRef(id))
	if errors.Is(err, refs.ErrNotFound) {
		return nil, nil, &NotFoundError{Place: id}
	}
	if err != nil {
		return nil, nil, err
	}
	p, err := DecodePlace(rec)
	if err != nil {
		return nil, nil, err
	}
	return rec, p, nil
}

// SavePlace writes p over the record rec it was decided from: one
// compare-and-swap (R2) whose commit message says what moved; a record
// moved meanwhile is a *refs.ConflictError. extra refs join the same
// transaction. It returns the record as written.
func SavePlace(ctx context.Context, s *refs.Store, rec *refs.Record, p *Place, msg string, extra ...git.RefUpdate) (*refs.Record, error) {
	w, err := s.Write(ctx, []refs.Change{PlaceChange(rec, p, msg)}, extra...)
	if err != nil {
		return nil, err
	}
	return w[0], nil
}

// PlaceChange is the write of place p's record over old (nil for a place
// not recorded yet), said by msg: the one shape every place write takes,
// alone (SavePlace) or in a transaction with other refs (a launch's making,
// a tidy deleting its claim, a commissioner naming its child).
func PlaceChange(old *refs.Record, p *Place, msg string) refs.Change {
	return refs.Change{Ref: PlaceRef(p.ID), Old: old, State: p, Message: msg}
}

// EditPlace is a read–decide–write loop on place id under the store's
// retry policy (R2): decide gets the place as it stands now, changes it
// and says what moved, or returns refs.ErrNoChange to write nothing. A
// record moved meanwhile is read again and decide runs again, so decide
// must have no side effects. It returns the record as it stands after.
func EditPlace(ctx context.Context, s *refs.Store, id string, decide func(p *Place) (msg string, err error)) (*refs.Record, error) {
	return s.Edit(ctx, PlaceRef(id), func(cur *refs.Record) (refs.Change, error) {
		if cur == nil {
			return refs.Change{}, &NotFoundError{Place: id}
		}
		p, err := DecodePlace(cur)
		if err != nil {
			return refs.Change{}, err
		}
		msg, err := decide(p)
		if err != nil {
			return refs.Change{}, err
		}
		return refs.Change{State: p, Message: msg}, nil
	})
}

func (p *Place) BranchRef() string { return "refs/heads/" + p.Branch }

// StageRuns are every agent run of st, oldest first.
func StageRuns(st *StageRecord) []*run.Agent {
	runs := make([]*run.Agent, 0, len(st.Earlier)+1)
	for i := range st.Earlier {
		runs = append(runs, &st.Earlier[i])
	}
	if st.Agent != nil {
		runs = append(runs, st.Agent)
	}
	return runs
}

// CurrentRun is the current stage's agent, if any.
func CurrentRun(p *Place) *run.Agent {
	if p.Current >= len(p.Stages) {
		return nil
	}
	return p.Stages[p.Current].Agent
}

// AgentPaneHost names the pane host of a, reading a record older than the
// field as tmux.
func AgentPaneHost(a *run.Agent) string {
	switch {
	case a.Pane == "print":
		return ""
	case a.PaneHost == "":
		return "tmux"
	}
	return a.PaneHost
}

// ConfigRev is the commit place p's configuration is read from (A13).
func (p *Place) ConfigRev() string {
	if p.ConfigAt != "" {
		return p.ConfigAt
	}
	return p.Base
}
