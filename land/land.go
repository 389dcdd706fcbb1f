package land

import (
	"context"
	"fmt"
	"strings"

	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/internal/words"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
)

// Lander is the lander for one command, in its repository opened once.
type Lander struct {
	r *stage.Repository
	// Remote is the shared remote every target lives on, "" to read each
	// target's [land] remote (Q8).
	Remote string
	// Wait: a run waits its turn behind a lander already running in the
	// repository, rather than refusing.
	Wait bool
	// tips are the targets' tips as the last listing of the queue read
	// them.
	tips map[string]targetTip
	// held are the claims on shared targets' queues this run holds (Q11),
	// "<remote> <target>" → the claim's commit there.
	held map[string]string
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

// Auto reports whether entry e's target asks that each submit start
// the lander ([land] auto as committed on the local target; Q9), and the
// checkout to run it in: the repository's main one.
func (l *Lander) Auto(ctx context.Context, e *Entry) (string, bool) {
	if e.State != Queued {
		return "", false
	}
	cfg, err := l.r.Config(ctx, "refs/heads/"+e.Target)
	if err != nil || !cfg.LandAuto {
		return "", false
	}
	dir, err := l.r.Git.MainCheckout(ctx)
	return dir, err == nil
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

// tellReturned tells a returned entry's place's agent why its
// submission came back and what to do, when that agent worked a stage
// that ends with the landing (Q4): the agent fixes its branch and submits
// again. An agent up is told (the operator's Tell, confirmed in its
// transcript); one whose process ended, and that no person stopped, has
// its stage started again, its session resumed where its program can,
// told the same. A tell or a start refused is said, and the person's
// next step stands.
func (l *Lander) tellReturned(ctx context.Context, o *Outcome) {
	e := o.Entry
	_, p, err := record.ReadPlace(ctx, l.r.Store, e.Place)
	if err != nil || p.Host != l.r.Host || p.Phase != record.PhaseMade {
		return
	}
	st := p.Stages[p.Current]
	if st.Deliverable != stage.DeliverLanded || st.Agent == nil || st.State == agentrun.StateBlocked && st.Block == agentrun.BlockStopped {
		return
	}
	text := returnedText(e)
	opts := stage.PlaceOptions{Repo: l.r.Dir, Place: e.Place}
	op := engine.NewOperator(l.r)
	if !st.Agent.Ended && l.r.Engine.Up(ctx, st.Agent) {
		err = op.Tell(ctx, engine.TellOptions{PlaceOptions: opts, Text: text})
	} else {
		_, err = op.RestartStage(ctx, opts, engine.RestartRules{Verb: "restart", Check: func(*record.Place) error { return nil }, Followup: text, Resume: true})
		o.Restarted = err == nil
	}
	if err != nil {
		o.NotTold = err.Error()
		return
	}
	o.Told = true
}

// returnedText is what a returned entry's agent is told: why, the
// conflicting files or the check's last lines, and to fix and submit
// again. A check's output is the repository's: nothing in it reaches the
// agent as a control character.
func returnedText(e *Entry) string {
	text := "flume: the lander returned your submission of " + e.Branch + ": " + e.Reason + "."
	if len(e.Conflicts) > 0 {
		text += " Conflicting files: " + strings.Join(e.Conflicts, ", ") + "."
	}
	if p := e.Proof; p != nil && !p.Passed && len(p.Checks) > 0 && strings.TrimSpace(p.Checks[len(p.Checks)-1].Tail) != "" {
		text += " The check's output ends: " + strings.ReplaceAll(words.LastLines(p.Checks[len(p.Checks)-1].Tail, 5), "\n", " / ")
	}
	text += " Fix the branch, commit, and run git flume submit " + e.Place + " again."
	return term.Clean(text)
}

// notify tells the declared notifier what the lander did with an entry (Q12)
// (event "land"): landed, returned, or proven and waiting for a reviewer;
// the message names what a person does next.
func (l *Lander) notify(ctx context.Context, o *Outcome) {
	e := o.Entry
	if o.Voided || e.State != Landed && e.State != Returned && e.State != Proven {
		return
	}
	_, p, err := record.ReadPlace(ctx, l.r.Store, e.Place)
	if err != nil || p.Parent != nil {
		return // a delegated place answers to its commissioner, not a person
	}
	cfg, err := l.r.Config(ctx, p.ConfigRev())
	if err != nil || cfg.Notify.Command == "" {
		return
	}
	ev := engine.Event{Schema: 1, Event: "land", Place: e.Place, Repo: p.Repo, Branch: e.Branch, At: l.r.NowUTC(), Land: e}
	switch e.State {
	case Landed:
		ev.Message = fmt.Sprintf("%s: landed on %s at %.12s", e.Place, e.Target, e.Proof.Candidate)
	case Proven:
		ev.Message = fmt.Sprintf("%s: proven green on %s, waiting for approval", e.Place, e.Target)
		ev.Reply = "git flume approve " + e.Place
	case Returned:
		ev.Message = fmt.Sprintf("%s: returned by the lander: %s", e.Place, e.Reason)
		if !o.Told {
			ev.Reply = "fix its branch, then git flume submit " + e.Place
		}
	}
	if ev.Reply != "" {
		ev.Message += "; reply: " + ev.Reply
	}
	engine.SendEvent(ctx, l.r.Env, p, cfg, ev)
}
