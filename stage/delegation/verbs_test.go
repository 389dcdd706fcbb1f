package delegation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
)

// The commissioner's verbs on records in memory, their git acts and the
// workflows they lean on faked: no git is started (the scripts
// delegation_*.txtar run the same verbs end to end).

var (
	at        = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	leadBase  = strings.Repeat("1", 40)
	childHead = strings.Repeat("2", 40)
)

// world is a commissioner change--lead with one delegated place
// fix--child, in a store in memory, and the verbs over it.
type world struct {
	t      *testing.T
	store  *refs.Store
	env    *stage.Env
	flow   *fakeFlow
	git    *fakeGit
	verbs  *Verbs
	events []string
}

func newWorld(t *testing.T, childState string) *world {
	t.Helper()
	w := &world{t: t, store: refs.NewMemory(refs.Kinds{record.PlaceKind, refs.ClaimKind})}
	w.env = &stage.Env{Host: "h", Now: func() time.Time { return at }}
	w.flow = &fakeFlow{w: w}
	w.git = &fakeGit{w: w, heads: map[string]string{"refs/heads/change/lead": leadBase, "refs/heads/fix/child": childHead}}
	w.verbs = &Verbs{env: w.env, store: w.store, flow: w.flow, git: w.git}
	lead := newPlace("change", "lead", "main", agentrun.StateWorking)
	lead.Children = []string{"fix--child"}
	child := newPlace("fix", "child", "change/lead", childState)
	child.Base = leadBase
	child.Parent = &record.Delegation{Parent: "change--lead", Run: 1, At: at}
	ctx := context.Background()
	if _, err := w.store.Write(ctx, []refs.Change{record.PlaceChange(nil, lead, "launch"), record.PlaceChange(nil, child, "launch")}); err != nil {
		t.Fatal(err)
	}
	return w
}

func newPlace(kind, name, target, state string) *record.Place {
	id := kind + "--" + name
	p := &record.Place{Schema: 1, Kind: "place", ID: id, PlaceKind: kind, Name: name, Repo: "/r", Path: "/r/places/" + id,
		Branch: kind + "/" + name, Base: leadBase, Target: target, Brief: "b", Host: "h", Created: at, Phase: record.PhaseMade,
		Stages: []record.StageRecord{{Name: "code", Prompt: "code", Deliverable: stage.DeliverCommit, Runs: 1}}}
	p.Stages[0].State = state
	return p
}

func (w *world) read(id string) *record.Place {
	w.t.Helper()
	_, p, err := record.ReadPlace(context.Background(), w.store, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

func (w *world) did(event string) { w.events = append(w.events, event) }

// fakeFlow does to the records what the workflows would, and says so.
type fakeFlow struct {
	w *world
	// keep: tidy keeps the place, saying why.
	keep string
}

func (f *fakeFlow) Advance(_ context.Context, id string) { f.w.did("advance " + id) }

func (f *fakeFlow) ReadGated(_ context.Context, id string, _ stage.GateOptions) (*record.Place, error) {
	return f.w.read(id), nil
}

func (f *fakeFlow) Restart(_ context.Context, o stage.PlaceOptions, how engine.RestartRules) (*record.Place, error) {
	p := f.w.read(o.Place)
	if err := how.Check(p); err != nil {
		return nil, err
	}
	f.w.did(fmt.Sprintf("restart %s: %s", o.Place, how.Followup))
	return p, nil
}

func (f *fakeFlow) Tell(_ context.Context, o engine.TellOptions) error {
	f.w.did("tell " + o.Place + ": " + o.Text)
	return nil
}

func (f *fakeFlow) Up(context.Context, *agentrun.Agent) bool { return false }

func (f *fakeFlow) Tidy(ctx context.Context, o stage.PlaceOptions) error {
	f.w.did("tidy " + o.Place)
	_, err := record.EditPlace(ctx, f.w.store, o.Place, func(cur *record.Place) (string, error) {
		if f.keep != "" {
			cur.Kept = f.keep
			return "tidy " + cur.ID + ": kept", nil
		}
		cur.Phase, cur.Tidied = record.PhaseTidied, &record.TidyRecord{At: at, Reason: "landed"}
		return "tidy " + cur.ID, nil
	})
	return err
}

func (f *fakeFlow) Drop(ctx context.Context, o stage.PlaceOptions) error {
	f.w.did("drop " + o.Place)
	_, err := record.EditPlace(ctx, f.w.store, o.Place, func(cur *record.Place) (string, error) {
		cur.Dropped = &at
		return "drop " + cur.ID, nil
	})
	return err
}

// fakeGit keeps branch heads in a map and says what it was asked.
type fakeGit struct {
	w      *world
	heads  map[string]string
	refuse error // Merge refuses with it
}

func (g *fakeGit) CheckHome(context.Context, *record.Place) error { return nil }

func (g *fakeGit) ResolveRef(_ context.Context, ref string) (string, error) {
	if id, ok := g.heads[ref]; ok {
		return id, nil
	}
	return "", fmt.Errorf("resolve %q: %w", ref, git.ErrNotExist)
}

func (g *fakeGit) IsAncestor(_ context.Context, a, b string) (bool, error) { return a == b, nil }

func (g *fakeGit) Merge(_ context.Context, dir, commit, _ string) error {
	// The commissioner's stage names what it accepts before its branch
	// moves (its engine must never take the child's commits for its own).
	if lead := g.w.read("change--lead"); !slices.Contains(lead.Stages[lead.Current].Accepted, commit) {
		g.w.t.Errorf("merged %.12s before the commissioner's stage recorded it accepted", commit)
	}
	if g.refuse != nil {
		return g.refuse
	}
	g.w.did("merge " + commit[:4] + " in " + dir)
	g.heads["refs/heads/change/lead"] = commit
	return nil
}

// Reset is engine.ResetPlace on a clean work tree: nothing kept, and
// nothing done, when the branch is there already.
func (g *fakeGit) Reset(_ context.Context, p *record.Place, _ *record.StageRecord, commit, _, _ string) (*record.Snapshot, error) {
	if g.heads[p.BranchRef()] == commit {
		return nil, nil
	}
	g.w.did("reset " + p.ID + " to " + commit[:4])
	kept := &record.Snapshot{Why: "reset", Ref: refs.SnapshotPrefix + p.ID + "/1-code-1-reset", Commit: g.heads[p.BranchRef()]}
	g.heads[p.BranchRef()] = commit
	return kept, nil
}

func (g *fakeGit) LockDelegations(_ context.Context, commissioner string) (func(), error) {
	g.w.did("lock " + commissioner)
	return func() { g.w.did("unlock " + commissioner) }, nil
}

func person() stage.PlaceOptions { return stage.PlaceOptions{Repo: "/r", Place: "fix--child"} }

// TestAcceptMergesRecordsAndTidies_A9: accepting a finished child records
// its head in the commissioner's stage, merges it in the commissioner's
// work tree, records the delegation accepted and tidies the child, under
// the commissioner's delegation lock.
func TestAcceptMergesRecordsAndTidies_A9(t *testing.T) {
	w := newWorld(t, agentrun.StateDelivered)
	p, err := w.verbs.Accept(context.Background(), person())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"advance fix--child", "lock change--lead", "merge 2222 in /r/places/change--lead", "tidy fix--child", "unlock change--lead"}
	if !slices.Equal(w.events, want) {
		t.Errorf("did %q, want %q", w.events, want)
	}
	if p.Parent.Outcome != record.OutcomeAccepted || p.Parent.Closed == nil || p.Phase != record.PhaseTidied {
		t.Errorf("child after accept: outcome %q, closed %v, phase %s", p.Parent.Outcome, p.Parent.Closed, p.Phase)
	}
	if lead := w.read("change--lead"); !slices.Equal(lead.Stages[0].Accepted, []string{childHead}) {
		t.Errorf("commissioner's stage accepted %q, want the child's head", lead.Stages[0].Accepted)
	}
	// Run again, it says so and does nothing.
	w.events = nil
	var refused *stage.RefusedError
	if _, err := w.verbs.Accept(context.Background(), person()); !errors.As(err, &refused) || !strings.Contains(err.Error(), "already accepted") {
		t.Errorf("a second accept: %v, want refused as already accepted", err)
	}
	if slices.ContainsFunc(w.events, func(e string) bool { return strings.HasPrefix(e, "merge") || strings.HasPrefix(e, "tidy") }) {
		t.Errorf("a second accept did %q", w.events)
	}
}

// TestAcceptKeptByTidyIsSettled_A9: a tidy that keeps the accepted child
// (a dirty work tree, say) leaves the delegation accepted and settled,
// and says why it is still there.
func TestAcceptKeptByTidyIsSettled_A9(t *testing.T) {
	w := newWorld(t, agentrun.StateDelivered)
	w.flow.keep = "its work tree has changes"
	p, err := w.verbs.Accept(context.Background(), person())
	if err != nil {
		t.Fatal(err)
	}
	if !p.Parent.Settled || p.Kept == "" {
		t.Errorf("kept child: settled %v, kept %q", p.Parent.Settled, p.Kept)
	}
	_, err = w.verbs.Accept(context.Background(), person())
	if err == nil || !strings.Contains(err.Error(), "its tidy kept it: its work tree has changes") {
		t.Errorf("accept of a kept child: %v, want why it is still there", err)
	}
}

// TestAcceptRefusals_A9: what is not a finished delegation of the
// caller's is refused with nothing merged and the records unmoved.
func TestAcceptRefusals_A9(t *testing.T) {
	for _, c := range []struct {
		name, state, caller, want string
		lost                      bool
		rolledBack                bool
	}{
		{name: "working", state: agentrun.StateWorking, want: "it is working, not finished"},
		{name: "another place", state: agentrun.StateDelivered, caller: "fix--other", want: "only its commissioner change--lead (or a person) may accept it, not fix--other"},
		{name: "rolled back", state: agentrun.StateDelivered, rolledBack: true, lost: true, want: "already rolled-back by another command"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, c.state)
			if c.caller != "" {
				w.env.CallerEnv = []string{"FLUME_PLACE=" + c.caller}
			}
			if c.rolledBack {
				if _, err := record.EditPlace(context.Background(), w.store, "fix--child", func(cur *record.Place) (string, error) {
					cur.Parent.Outcome, cur.Parent.Closed = record.OutcomeRolledBack, &at
					return "roll back", nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			before := w.read("fix--child")
			_, err := w.verbs.Accept(context.Background(), person())
			var lost *stage.LostError
			var refused *stage.RefusedError
			switch {
			case err == nil || !strings.Contains(err.Error(), c.want):
				t.Fatalf("accept: %v, want %q", err, c.want)
			case c.lost && !errors.As(err, &lost), !c.lost && !errors.As(err, &refused):
				t.Fatalf("accept: %T %v", err, err)
			}
			if after := w.read("fix--child"); fmt.Sprint(after.Parent) != fmt.Sprint(before.Parent) || after.Phase != before.Phase {
				t.Errorf("a refused accept moved the record")
			}
			if w.git.heads["refs/heads/change/lead"] != leadBase {
				t.Error("a refused accept moved the commissioner's branch")
			}
		})
	}
}

// TestAcceptRefusedByGitChangesNothing_A9: a merge git refuses is said
// with git's words, and the delegation stays open.
func TestAcceptRefusedByGitChangesNothing_A9(t *testing.T) {
	w := newWorld(t, agentrun.StateDelivered)
	w.git.refuse = errors.New("CONFLICT (content): Merge conflict in a.go")
	_, err := w.verbs.Accept(context.Background(), person())
	var refused *stage.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "Merge conflict in a.go") {
		t.Fatalf("accept over a conflict: %v", err)
	}
	if p := w.read("fix--child"); p.Parent.Outcome != "" || p.Phase != record.PhaseMade {
		t.Errorf("child after a refused merge: outcome %q, phase %s", p.Parent.Outcome, p.Phase)
	}
}

// TestRollbackGoesOnAfterACrash_A9: rollback records its outcome first,
// so a rollback killed after any later step goes on from there when run
// again: the child dropped once, its work and the commissioner reset once
// each, then tidied; an accept after it has lost.
func TestRollbackGoesOnAfterACrash_A9(t *testing.T) {
	for _, point := range []string{"rollback:recorded", "rollback:dropped", "rollback:undone", "rollback:restored"} {
		t.Run(point, func(t *testing.T) {
			w := newWorld(t, agentrun.StateWorking)
			// The commissioner committed after it delegated.
			w.git.heads["refs/heads/change/lead"] = strings.Repeat("3", 40)
			w.env.Fault = func(p string) {
				if p == point {
					panic(p)
				}
			}
			func() {
				defer func() {
					if r := recover(); r != point {
						t.Fatalf("the first rollback ran past %s (%v)", point, r)
					}
				}()
				_, _ = w.verbs.Rollback(context.Background(), person())
			}()
			w.env.Fault = nil
			p, err := w.verbs.Rollback(context.Background(), person())
			if err != nil {
				t.Fatalf("rollback run again after %s: %v", point, err)
			}
			if p.Parent.Outcome != record.OutcomeRolledBack || !p.Parent.Restored || p.Phase != record.PhaseTidied {
				t.Errorf("after rollback: outcome %q, restored %v, phase %s", p.Parent.Outcome, p.Parent.Restored, p.Phase)
			}
			for _, e := range []string{"drop fix--child", "reset fix--child to 1111", "reset change--lead to 1111"} {
				if n := countOf(w.events, e); n != 1 {
					t.Errorf("%q done %d times, want once: %q", e, n, w.events)
				}
			}
			var lost *stage.LostError
			if _, err := w.verbs.Accept(context.Background(), person()); !errors.As(err, &lost) {
				t.Errorf("accept after rollback: %v, want lost", err)
			}
		})
	}
}

// TestReopenAndUnblock_A9: reopen needs a reason and starts the stage
// again told it; unblock of a child that is not blocked is refused.
func TestReopenAndUnblock_A9(t *testing.T) {
	w := newWorld(t, agentrun.StateDelivered)
	if _, err := w.verbs.Reopen(context.Background(), Options{PlaceOptions: person()}); err == nil {
		t.Error("reopen without a reason was taken")
	}
	if _, err := w.verbs.Reopen(context.Background(), Options{PlaceOptions: person(), Text: "add the test"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(w.events, "restart fix--child: Your commissioner reopened this stage: add the test") {
		t.Errorf("reopen did %q", w.events)
	}
	var refused *stage.RefusedError
	if _, err := w.verbs.Unblock(context.Background(), Options{PlaceOptions: person(), Text: "go on"}); !errors.As(err, &refused) || !strings.Contains(err.Error(), "not blocked") {
		t.Errorf("unblock of a finished child: %v", err)
	}
}

func countOf(events []string, e string) int {
	n := 0
	for _, x := range events {
		if x == e {
			n++
		}
	}
	return n
}
