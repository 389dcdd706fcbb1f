package land

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/internal/words"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/radar"
	"github.com/git-flume/git-flume/stage/record"
)

// Lander is the lander for one command, in its repository opened once.
type Lander struct {
	r *stage.Repository
}

// New is the lander of repository r.
func New(r *stage.Repository) *Lander { return &Lander{r: r} }

// Submit submits place id's branch as it now stands (Q1): a new entry, or
// the place's entry queued again at its new tip. Only this host's made
// places are submitted (R7).
func (l *Lander) Submit(ctx context.Context, id string) (*Entry, error) {
	env, store, repo := l.r.Env, l.r.Store, l.r.Git
	_, p, err := record.ReadPlace(ctx, store, id)
	if err != nil {
		return nil, err
	}
	if err := stage.OwnedHere(env, p); err != nil {
		return nil, err
	}
	if from := stage.CallerPlace(env); from != "" && from != id {
		return nil, &stage.RefusedError{Place: id, Reason: "only its own agent (or a person) submits a place, not " + from + "'s"}
	}
	if p.Phase != record.PhaseMade {
		return nil, &stage.RefusedError{Place: id, Reason: "it is " + p.Phase + ", not made: only a place's branch is submitted"}
	}
	tip, err := repo.ResolveRef(ctx, p.BranchRef())
	if err != nil {
		return nil, fmt.Errorf("%s: branch %s: %w", id, p.Branch, err)
	}
	e := &Entry{Schema: 1, Kind: "land", Place: id, Branch: p.Branch, Target: p.Target, Tip: tip, Host: env.Host,
		Submitted: env.NowUTC(), State: Queued}
	rec, old, err := read(ctx, store, id)
	if err != nil {
		return nil, err
	}
	if old != nil && old.Tip == tip && old.State != Returned {
		return old, nil // in already, as it stands
	}
	_, err = store.Write(ctx, []refs.Change{{Ref: Ref(id), Old: rec, State: e, Message: fmt.Sprintf("submit %s at %.12s for %s", id, tip, p.Target)}})
	return e, err
}

// Outcome is what a step of the lander did with one entry.
type Outcome struct {
	Entry *Entry
	// Voided: the target moved while the entry was proven; it stays queued.
	Voided bool
	// Told: a returned entry's place's agent, up in its submit stage, was
	// told why (confirmed in its transcript); NotTold says why it was not,
	// when there was an agent to tell.
	Told    bool
	NotTold string
}

// maxVoided bounds the proofs a moving target may void for one entry in
// one run of the lander; the entry stays queued for the next.
const maxVoided = 3

// Run takes this host's queued entries in the radar's land order, one at
// a time, until none is left that it can decide (Q4): each is landed,
// returned, or left queued after its proofs were voided maxVoided times.
// A place returned in this run is not taken again in it.
func (l *Lander) Run(ctx context.Context) ([]Outcome, error) {
	var done []Outcome
	voided := map[string]int{}
	var order map[string]int // read when two entries wait, once a run
	for {
		e, err := l.next(ctx, voided, &order)
		if err != nil || e == nil {
			return done, err
		}
		o, err := l.step(ctx, e)
		if err != nil {
			return done, fmt.Errorf("%s: %w", e.Place, err)
		}
		if o.Entry != nil && o.Entry.State == Returned {
			// Not taken again in this run, even submitted again at once
			// by its agent: an agent that resubmits without a fix must
			// not hold the lander in a loop.
			voided[e.Place] = maxVoided
			l.tellReturned(ctx, &o)
		}
		if o.Voided {
			voided[e.Place]++
		}
		done = append(done, o)
	}
}

// landOrder is the radar's land order of this host's places, by place:
// the independent first (Q4).
func (l *Lander) landOrder(ctx context.Context) (map[string]int, error) {
	steps, err := radar.LandOrder(ctx, l.r.Env, l.r.Dir)
	if err != nil {
		return nil, err
	}
	order := make(map[string]int, len(steps))
	for i, st := range steps {
		order[st.Place] = i + 1
	}
	return order, nil
}

// next is the queued entry of this host to take first, not yet voided
// maxVoided times in this run: in the radar's land order, then the
// oldest, then by name. A place the order does not name (its work all on
// the target since it was read) comes after those it does.
func (l *Lander) next(ctx context.Context, voided map[string]int, order *map[string]int) (*Entry, error) {
	records, _, err := l.r.Store.List(ctx, Prefix)
	if err != nil {
		return nil, err
	}
	var queued []*Entry
	for _, rec := range records {
		var e Entry
		if err := rec.Decode(&e); err != nil || e.State != Queued || e.Host != l.r.Host || voided[e.Place] >= maxVoided {
			continue
		}
		queued = append(queued, &e)
	}
	switch {
	case len(queued) == 0:
		return nil, nil
	case len(queued) == 1:
		return queued[0], nil // no order to read: the radar merges every pair of places
	case *order == nil:
		if *order, err = l.landOrder(ctx); err != nil {
			return nil, err
		}
	}
	rank := func(e *Entry) int {
		if i, ok := (*order)[e.Place]; ok {
			return i
		}
		return len(*order) + 1
	}
	slices.SortFunc(queued, func(a, b *Entry) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), a.Submitted.Compare(b.Submitted), strings.Compare(a.Place, b.Place))
	})
	return queued[0], nil
}

// step proves entry e on its target's tip and lands it, or returns it
// (Q2, Q3): the candidate is the tip merged onto the target's tip T; the
// checks the repository declares at T run on it in a throwaway worktree;
// then the target moves from T to the candidate in the transaction that
// records the entry landed with its proof, or not at all.
func (l *Lander) step(ctx context.Context, e *Entry) (Outcome, error) {
	repo := l.r.Git
	target := "refs/heads/" + e.Target
	base, err := repo.ResolveCommit(ctx, target)
	if err != nil {
		return Outcome{}, fmt.Errorf("target %s: %w", e.Target, err)
	}
	if in, err := repo.IsAncestor(ctx, e.Tip, base); err != nil {
		return Outcome{}, err
	} else if in {
		return l.finish(ctx, e, Returned, fmt.Sprintf("its tip %.12s is on %s already: nothing to land", e.Tip, e.Target), nil, nil)
	}
	tree, conflicts, err := repo.MergedTree(ctx, base, e.Tip)
	if err != nil {
		return Outcome{}, err
	}
	if len(conflicts) > 0 {
		return l.finish(ctx, e, Returned, fmt.Sprintf("its merge onto %s at %.12s conflicts", e.Target, base), conflicts, nil)
	}
	cfg, err := l.r.Config(ctx, base)
	if err != nil {
		return Outcome{}, err
	}
	if len(cfg.Land) == 0 {
		return Outcome{}, &stage.RefusedError{Place: e.Place, Reason: "no check is declared ([land] check in " + stage.ConfigPath + " on " + e.Target +
			"): the lander lands only what a check passed on the target's tip"}
	}
	candidate, err := repo.CommitTreeWith(ctx, tree, fmt.Sprintf("Land %s onto %s\n\ngit flume land: %.12s merged onto %.12s", e.Place, e.Target, e.Tip, base), base, e.Tip)
	if err != nil {
		return Outcome{}, err
	}
	l.r.FaultAt("land:candidate")
	proof, err := l.prove(ctx, e, base, candidate, tree, cfg.Land)
	if err != nil {
		return Outcome{}, err
	}
	if !proof.Passed {
		last := proof.Checks[len(proof.Checks)-1]
		return l.finish(ctx, e, Returned, fmt.Sprintf("check %q exited %d on its merge onto %s at %.12s", strings.Join(last.Argv, " "), last.Exit, e.Target, base), nil, proof)
	}
	l.r.FaultAt("land:proven")
	o, err := l.finish(ctx, e, Landed, "", nil, proof, git.RefUpdate{Op: git.Update, Name: target, New: candidate, Old: base})
	var moved *git.ConflictError
	var lost *refs.ConflictError
	if errors.As(err, &moved) || errors.As(err, &lost) {
		// The target moved since its tip was read: this proof is of
		// another tip, and void (Q3). The entry stays queued.
		_, verr := l.edit(ctx, e.Place, func(cur *Entry) (string, error) {
			cur.Voided++
			return fmt.Sprintf("land %s: proof on %.12s void, %s moved", cur.Place, base, cur.Target), nil
		})
		return Outcome{Entry: e, Voided: true}, verr
	}
	return o, err
}

// prove runs checks on candidate in a throwaway worktree, one after
// another until one fails, each with the clean environment of a
// repository step (X4) and the lander's variables.
func (l *Lander) prove(ctx context.Context, e *Entry, base, candidate, tree string, checks []stage.Step) (*Proof, error) {
	repo, env := l.r.Git, l.r.Env
	dir := filepath.Join(repo.CommonDir, "flume", "land", e.Place)
	// A worktree a lander killed mid-check left is removed first.
	_ = repo.RemoveWorktree(ctx, dir, true)
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	if err := repo.AddDetachedWorktree(ctx, dir, candidate); err != nil {
		return nil, err
	}
	defer func() { _ = repo.RemoveWorktree(context.WithoutCancel(ctx), dir, true) }()
	vars := proc.StepEnv(env.CallerEnv, "FLUME_PLACE="+e.Place, "FLUME_BRANCH="+e.Branch, "FLUME_TARGET="+e.Target,
		"FLUME_BASE="+base, "FLUME_CANDIDATE="+candidate)
	proof := &Proof{Base: base, Candidate: candidate, Tree: tree, Passed: true, At: env.NowUTC()}
	digest := sha256.New()
	fmt.Fprintf(digest, "tree %s\n", tree)
	for _, v := range vars {
		fmt.Fprintf(digest, "env %s\n", v)
	}
	for _, st := range checks {
		argv, err := st.Argv()
		if err != nil {
			return nil, fmt.Errorf("check %q: %w", st.Command, err)
		}
		fmt.Fprintf(digest, "check %q\n", argv)
		var out bytes.Buffer
		start := time.Now()
		code, err := proc.RunStep(ctx, proc.Cmd{Path: argv[0], Args: argv[1:], Dir: dir, Env: vars, Stdout: &out, Stderr: &out})
		if err != nil {
			fmt.Fprintf(&out, "%v\n", err)
		}
		proof.Checks = append(proof.Checks, Check{Argv: argv, Exit: code, DurationMs: time.Since(start).Milliseconds(), Tail: tail(out.String())})
		if code != 0 {
			proof.Passed = false
			break
		}
	}
	proof.Digest = hex.EncodeToString(digest.Sum(nil))
	return proof, nil
}

// tail is the end of a check's output as a step's record keeps it (its
// last proc.TailLines lines), and at most maxTail bytes of those, whole
// lines.
func tail(s string) string {
	s = words.LastLines(s, proc.TailLines)
	if len(s) <= maxTail {
		return s
	}
	s = s[len(s)-maxTail:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// finish records entry e's outcome, with extra refs moved in the same
// transaction (the target, for a landing).
func (l *Lander) finish(ctx context.Context, e *Entry, state, reason string, conflicts []string, proof *Proof, extra ...git.RefUpdate) (Outcome, error) {
	rec, err := l.edit(ctx, e.Place, func(cur *Entry) (string, error) {
		if cur.State != Queued || cur.Tip != e.Tip {
			return "", fmt.Errorf("its entry moved while it was proven (now %s at %.12s): run land again", cur.State, cur.Tip)
		}
		cur.State, cur.Reason, cur.Conflicts, cur.Proof = state, reason, conflicts, proof
		if state == Landed {
			return fmt.Sprintf("land %s: %s moved from %.12s to %.12s", cur.Place, cur.Target, proof.Base, proof.Candidate), nil
		}
		return fmt.Sprintf("land %s: returned: %s", cur.Place, reason), nil
	}, extra...)
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{Entry: rec}, nil
}

// edit moves place id's entry by CAS, with extra refs in the same
// transaction.
func (l *Lander) edit(ctx context.Context, id string, change func(*Entry) (string, error), extra ...git.RefUpdate) (*Entry, error) {
	rec, cur, err := read(ctx, l.r.Store, id)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, fmt.Errorf("%s: no land entry", id)
	}
	msg, err := change(cur)
	if err != nil {
		return nil, err
	}
	if _, err := l.r.Store.Write(ctx, []refs.Change{{Ref: Ref(id), Old: rec, State: cur, Message: msg}}, extra...); err != nil {
		return nil, err
	}
	return cur, nil
}

// tellReturned tells a returned entry's place's agent, when it is up in
// a stage that ends with the landing, why its submission came back and
// what to do: the agent fixes its branch and submits again (Q4). A tell
// refused (the agent busy with a question, a dialog) is said, and the
// person's next step stands.
func (l *Lander) tellReturned(ctx context.Context, o *Outcome) {
	e := o.Entry
	_, p, err := record.ReadPlace(ctx, l.r.Store, e.Place)
	if err != nil || p.Host != l.r.Host || p.Phase != record.PhaseMade {
		return
	}
	st := p.Stages[p.Current]
	if st.Deliverable != stage.DeliverLanded || st.Agent == nil || st.Agent.Ended || !l.r.Engine.Up(ctx, st.Agent) {
		return
	}
	text := "flume: the lander returned your submission of " + e.Branch + ": " + e.Reason + "."
	if len(e.Conflicts) > 0 {
		text += " Conflicting files: " + strings.Join(e.Conflicts, ", ") + "."
	}
	if p := e.Proof; p != nil && !p.Passed && len(p.Checks) > 0 {
		text += " The check's output ends: " + strings.ReplaceAll(words.LastLines(p.Checks[len(p.Checks)-1].Tail, 5), "\n", " / ")
	}
	text += " Fix the branch, commit, and run git flume submit " + e.Place + " again."
	// A check's output is the repository's: nothing in it reaches the
	// agent's pane as a control character.
	text = term.Clean(text)
	if err := engine.NewOperator(l.r).Tell(ctx, engine.TellOptions{PlaceOptions: stage.PlaceOptions{Repo: l.r.Dir, Place: e.Place}, Text: text}); err != nil {
		o.NotTold = err.Error()
		return
	}
	o.Told = true
}
