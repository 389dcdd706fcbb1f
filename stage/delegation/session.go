package delegation

import (
	"context"

	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
)

// Verbs are the commissioner's verbs for one command: its repository
// opened once (stage.Repository), and what the verbs lean on beyond the
// records, each declared below as narrowly as they use it. A test gives
// them a store in memory (refs.NewMemory) and fakes, and spawns no git.
type Verbs struct {
	env   *stage.Env
	store *refs.Store
	flow  workflows
	git   branches
}

// workflows are the stage engine's and the places' own verbs on one
// place, which a delegation verb runs as a step of its own.
type workflows interface {
	// Advance records what happened to place id since its last step.
	Advance(ctx context.Context, id string)
	// ReadGated reads place id through the session gate (R8).
	ReadGated(ctx context.Context, id string, g stage.GateOptions) (*record.Place, error)
	// Restart starts the place's current stage again (engine.RestartStage).
	Restart(ctx context.Context, o stage.PlaceOptions, how engine.RestartRules) (*record.Place, error)
	// Tell tells the place's agent text, confirmed in its transcript (A4).
	Tell(ctx context.Context, o engine.TellOptions) error
	// Up reports an agent up in its pane.
	Up(ctx context.Context, a *agentrun.Agent) bool
	// Tidy tidies the one place o names.
	Tidy(ctx context.Context, o stage.PlaceOptions) error
	// Drop ends the place's agent and records it dropped, under the
	// delegation lock its caller holds (place.DropHeld).
	Drop(ctx context.Context, o stage.PlaceOptions) error
}

// branches are the git acts on places' branches and work trees.
type branches interface {
	// CheckHome refuses a place whose record does not live here.
	CheckHome(ctx context.Context, p *record.Place) error
	ResolveRef(ctx context.Context, ref string) (string, error)
	IsAncestor(ctx context.Context, ancestor, of string) (bool, error)
	// Merge merges commit into the work tree at dir.
	Merge(ctx context.Context, dir, commit, message string) error
	// Reset moves p's branch and work tree to commit (tree, when given),
	// keeping what they held in a snapshot of stage st (engine.ResetPlace).
	Reset(ctx context.Context, p *record.Place, st *record.StageRecord, commit, tree, reflog string) (*record.Snapshot, error)
	// LockDelegations takes the commissioner's delegation lock.
	LockDelegations(ctx context.Context, commissioner string) (unlock func(), err error)
}

// New are the verbs of one command in repository r, opened once.
func New(r *stage.Repository) *Verbs {
	return &Verbs{env: r.Env, store: r.Store,
		flow: engineFlows{r: r, op: engine.NewOperator(r)},
		git:  repoBranches{env: r.Env, repo: r.Git}}
}

// engineFlows are the workflows as stage/engine and stage/place run them.
type engineFlows struct {
	r  *stage.Repository
	op *engine.Operator
}

func (f engineFlows) Advance(ctx context.Context, id string) {
	// A step that fails is taken again by the next; the verb reads the
	// record as it is either way.
	_, _ = engine.Advance(ctx, f.r, id)
}

func (f engineFlows) ReadGated(ctx context.Context, id string, g stage.GateOptions) (*record.Place, error) {
	_, p, err := f.op.ReadGated(ctx, id, g)
	return p, err
}

func (f engineFlows) Restart(ctx context.Context, o stage.PlaceOptions, how engine.RestartRules) (*record.Place, error) {
	return f.op.RestartStage(ctx, o, how)
}

func (f engineFlows) Tell(ctx context.Context, o engine.TellOptions) error {
	return f.op.Tell(ctx, o)
}

func (f engineFlows) Up(ctx context.Context, a *agentrun.Agent) bool { return f.r.Engine.Up(ctx, a) }

func (f engineFlows) Tidy(ctx context.Context, o stage.PlaceOptions) error {
	_, err := place.New(f.r).Tidy(ctx, place.TidyOptions{Place: o.Place, Gate: o.Gate})
	return err
}

func (f engineFlows) Drop(ctx context.Context, o stage.PlaceOptions) error {
	_, err := place.New(f.r).DropHeld(ctx, o)
	return err
}

// repoBranches are the git acts as the repository does them.
type repoBranches struct {
	env  *stage.Env
	repo *git.Repo
}

func (b repoBranches) CheckHome(ctx context.Context, p *record.Place) error {
	return stage.CheckHome(ctx, b.env, b.repo, p)
}

func (b repoBranches) ResolveRef(ctx context.Context, ref string) (string, error) {
	return b.repo.ResolveRef(ctx, ref)
}

func (b repoBranches) IsAncestor(ctx context.Context, ancestor, of string) (bool, error) {
	return b.repo.IsAncestor(ctx, ancestor, of)
}

func (b repoBranches) Merge(ctx context.Context, dir, commit, message string) error {
	return b.repo.Merge(ctx, dir, commit, message)
}

func (b repoBranches) Reset(ctx context.Context, p *record.Place, st *record.StageRecord, commit, tree, reflog string) (*record.Snapshot, error) {
	return engine.ResetPlace(ctx, b.repo, p, st, commit, tree, reflog)
}

func (b repoBranches) LockDelegations(ctx context.Context, commissioner string) (func(), error) {
	l, err := stage.LockDelegations(ctx, b.repo.CommonDir, commissioner)
	if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}
