package land

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/lockfile"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/radar"
	"github.com/git-flume/git-flume/stage/record"
)

// Outcome is what a run of the lander did with one entry.
type Outcome struct {
	Entry *Entry
	// Voided: the target moved while the entry was proven; it stays queued.
	Voided bool
	// Waits says why the entry was not proven in this run: the work below
	// it in a stack has not landed (Q10). It stays queued.
	Waits string
	// Told: a returned entry's place's agent, up in its submit stage, was
	// told why (confirmed in its transcript); NotTold says why it was not,
	// when there was an agent to tell.
	Told    bool
	NotTold string
	// Restarted: the agent had ended, and its stage was started again to
	// be told (Told too).
	Restarted bool
}

// maxVoided bounds the proofs a moving target may void for one entry in
// one run of the lander; the entry stays queued for the next.
const maxVoided = 3

// Run takes this host's queued entries in the radar's land order, a batch
// at a time, until none is left that it can decide (Q4, Q5): each is
// landed, returned, or left queued after its proofs were voided
// maxVoided times. A place returned in this run is not taken again in it.
// One lander runs in a repository at a time.
func (l *Lander) Run(ctx context.Context) ([]Outcome, error) {
	lock, err := l.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	l.held = map[string]string{}
	defer l.letGo(ctx)
	// the candidates merge places' commits, whose objects may wait in
	// their agents' own folders (A13)
	if err := stage.TakeAllOwnObjects(ctx, l.r.Git); err != nil {
		return nil, err
	}
	all, err := l.entries(ctx)
	if err != nil {
		return nil, err
	}
	if err := l.follow(ctx, all); err != nil {
		return nil, err
	}
	done, err := l.settleFirst(ctx, all)
	for i := range done {
		l.notify(ctx, &done[i])
	}
	if err != nil {
		return done, err
	}
	held := map[string]int{}
	var order map[string]int // read when two entries wait, once a run
	for {
		queued, err := l.queued(ctx, held, &order, false)
		if err != nil || len(queued) == 0 {
			return done, err
		}
		outs, err := l.batch(ctx, queued)
		for i := range outs {
			switch o := &outs[i]; {
			case o.Waits != "":
				held[o.Entry.Place] = maxVoided
			case o.Voided:
				held[o.Entry.Place]++
			case o.Entry.State == Returned:
				// Not taken again in this run, even submitted again at
				// once by its agent: an agent that resubmits without a
				// fix must not hold the lander in a loop.
				held[o.Entry.Place] = maxVoided
				l.tellReturned(ctx, o)
			}
			l.notify(ctx, &outs[i])
		}
		done = append(done, outs...)
		if err != nil {
			return done, err
		}
	}
}

// settleFirst settles what needs no batch: the landings a run killed
// between intent and receipt left (Q8), then the entries whose place was
// dropped.
func (l *Lander) settleFirst(ctx context.Context, all []*Entry) ([]Outcome, error) {
	done, err := l.settleLanding(ctx, all)
	if err != nil {
		return done, err
	}
	if err := l.catchUp(ctx, all); err != nil {
		return done, err
	}
	dropped, err := l.withdrawDropped(ctx, all)
	return append(done, dropped...), err
}

// catchUp brings each local target along to its shared remote's (Q8)
// where this host's last landing there is not on it: a run killed between
// its receipt and its local move left it behind. One read of the newest
// landed entry a target; the remote is fetched only then.
func (l *Lander) catchUp(ctx context.Context, all []*Entry) error {
	newest := map[string]*Entry{}
	for _, e := range all {
		if e.Host == l.r.Host && e.State == Landed && e.Proof != nil {
			if n := newest[e.Target]; n == nil || e.Proof.At.After(n.Proof.At) {
				newest[e.Target] = e
			}
		}
	}
	for _, target := range slices.Sorted(maps.Keys(newest)) {
		local, err := l.r.Git.RefValue(ctx, "refs/heads/"+target)
		if err != nil || local == "" {
			continue
		}
		if in, err := l.r.Git.IsAncestor(ctx, newest[target].Proof.Candidate, local); err != nil || in {
			continue
		}
		l.tips = map[string]targetTip{}
		if _, err := l.targetTip(ctx, target); err != nil { // fetches, and brings it along
			return err
		}
	}
	return nil
}

// withdrawDropped (Q4) returns each queued or proven entry of this host whose
// place was dropped since it was submitted: a person gave that work up,
// and nothing of it lands.
func (l *Lander) withdrawDropped(ctx context.Context, all []*Entry) ([]Outcome, error) {
	var outs []Outcome
	for _, e := range all {
		if e.Host != l.r.Host || e.State != Queued && e.State != Proven {
			continue
		}
		if _, p, err := record.ReadPlace(ctx, l.r.Store, e.Place); err != nil || p.Dropped == nil {
			continue
		}
		o, err := l.settleOne(ctx, e, Returned, "its place was dropped: nothing of it lands", nil, e.Proof)
		if err != nil {
			return outs, err
		}
		outs = append(outs, *o)
	}
	return outs, nil
}

// lock takes the repository's lander lock: at once, or with Wait once
// the lander that holds it ends. Holding it, it says who it is (status
// and a second lander name it).
func (l *Lander) lock(ctx context.Context) (*lockfile.Lock, error) {
	commonDir := l.r.Git.CommonDir
	if err := os.MkdirAll(filepath.Dir(stage.LandLock(commonDir)), 0o755); err != nil {
		return nil, err
	}
	take := lockfile.TryTake
	if l.Wait {
		take = func(path string) (*lockfile.Lock, error) { return lockfile.Take(ctx, path) }
	}
	lock, err := take(stage.LandLock(commonDir))
	if errors.Is(err, lockfile.ErrBusy) {
		why := "another git flume land runs in this repository"
		if h := stage.LanderRunning(commonDir, l.r.Env.Host); h != "" {
			why = "the lander runs in this repository (" + h + ")"
		}
		return nil, &stage.RefusedError{Place: "land", Reason: why + ": it lands what is queued; git flume land --wait waits for it"}
	}
	if err == nil {
		stage.SayLander(l.r.Env, commonDir)
	}
	return lock, err
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

// queued are this host's entries the lander has work for, not yet held
// back maxVoided times in this run, in the order it takes them: the
// radar's land order, then the oldest, then by name. A place the order
// does not name (its work all on the target since it was read) comes
// after those it does. A proven entry waits for its approval (Q7) unless
// its target moved since its proof; with waiting, it is listed anyway.
func (l *Lander) queued(ctx context.Context, held map[string]int, order *map[string]int, waiting bool) ([]*Entry, error) {
	all, err := l.entries(ctx)
	if err != nil {
		return nil, err
	}
	l.tips = map[string]targetTip{}
	var queued []*Entry
	for _, e := range all {
		if e.Host != l.r.Host || held[e.Place] >= maxVoided || e.State != Queued && e.State != Proven {
			continue
		}
		if e.State == Proven && !e.Approved() {
			t, err := l.targetTip(ctx, e.Target)
			if err != nil {
				return nil, err
			}
			if t.approve && e.Proof.Base == t.tip && !waiting {
				continue
			}
		}
		queued = append(queued, e)
	}
	if len(queued) < 2 {
		return queued, nil // no order to read: the radar merges every pair of places
	}
	if *order == nil {
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
	slices.SortStableFunc(queued, func(a, b *Entry) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), a.Submitted.Compare(b.Submitted), strings.Compare(a.Place, b.Place))
	})
	return queued, nil
}

// targetTip is a target's tip as a run of the lander read it, whether
// its repository asks for approvals there, and the shared remote it
// lives on ("" for this repository's own branch).
type targetTip struct {
	tip     string
	approve bool
	remote  string
}

// targetTip reads target's tip and its [land] settings, once for each
// listing of the queue. A target on a shared remote (--remote, else
// [land] remote as committed on the local branch) is fetched: its tip is
// the remote's, as it is now (Q8).
func (l *Lander) targetTip(ctx context.Context, target string) (targetTip, error) {
	if t, ok := l.tips[target]; ok {
		return t, nil
	}
	repo, t := l.r.Git, targetTip{remote: l.Remote}
	var cfg *stage.Config
	tip, err := repo.ResolveCommit(ctx, "refs/heads/"+target)
	if err == nil {
		if cfg, err = l.r.Config(ctx, tip); err != nil {
			return t, err
		}
		t.remote = cmp.Or(t.remote, cfg.LandRemote)
	} else if t.remote == "" {
		return t, fmt.Errorf("target %s: %w", target, err)
	}
	if t.remote != "" {
		tracking := "refs/remotes/" + t.remote + "/" + target
		if err := repo.FetchRefs(ctx, t.remote, false, "+refs/heads/"+target+":"+tracking); err != nil {
			return t, fmt.Errorf("target %s on %s: %w", target, t.remote, err)
		}
		if tip, err = repo.ResolveCommit(ctx, tracking); err != nil {
			return t, fmt.Errorf("target %s on %s: %w", target, t.remote, err)
		}
		// kept current (Q8): a landing whose local move a kill cut off, or
		// a runner's target behind, is brought along before anything lands
		why, behind, err := stage.BringAlong(ctx, l.r, target, tip, "flume land: "+target+" brought along to "+t.remote+"'s")
		if err != nil {
			return t, err
		}
		if behind && why != "" {
			fmt.Fprintf(l.r.Env.Out, "git-flume: %s; the lander lands on %s's %s all the same\n", why, t.remote, target)
		}
		if cfg, err = l.r.Config(ctx, tip); err != nil {
			return t, err
		}
	}
	t.tip, t.approve = tip, cfg.LandApprove
	l.tips[target] = t
	return t, nil
}

// entries are the lander's entries, each read as its kind validates it.
func (l *Lander) entries(ctx context.Context) ([]*Entry, error) {
	records, _, err := l.r.Store.List(ctx, Prefix)
	if err != nil {
		return nil, err
	}
	all := make([]*Entry, 0, len(records))
	for _, rec := range records {
		var e Entry
		if rec.Decode(&e) == nil {
			all = append(all, &e)
		}
	}
	return all, nil
}

// A batch is the entries the lander tests together on one target's tip
// (Q5): a chain of candidates, each the next entry's tip merged onto the
// candidate before it, the first onto the target's tip.
type batch struct {
	target string // the target branch
	// tip is the target's tip as the batch read it, then as each landing
	// of a proven prefix moved it.
	tip    string
	links  []link
	checks []stage.Step
	// caches are the folders [land] cache lets its checks write (Q13).
	caches []string
	// timeout is how long one check may run ([land] timeout).
	timeout time.Duration
	runs    int
	// squash: each link has one parent, the entry's change squashed onto
	// the link before ([land] merge = squash).
	squash bool
	// approve: the target asks for approvals (Q7); size is [land] batch.
	approve bool
	size    int
	// checkout is the worktree the target is checked out in, if any: it
	// follows each move (Q6).
	checkout *git.Worktree
	// remote is the shared remote the target is on, "" for a local one.
	remote string
}

// link is one entry's merge in a batch's chain.
type link struct {
	e                    *Entry
	parent, commit, tree string
}

// batch makes a batch of the first queued entry's target, up to
// [land] batch of its entries in order, bottom first (Q10), and proves
// and lands it. Where the target asks for approvals (Q7), an entry not
// approved is proven alone, for a reviewer, and an approved one whose
// proof is on the target's tip as it stands lands as proven.
func (l *Lander) batch(ctx context.Context, queued []*Entry) ([]Outcome, error) {
	b, mine, outs, err := l.newBatch(ctx, queued)
	if err != nil || b == nil {
		return outs, err
	}
	first := mine[0]
	switch {
	case b.approve && !first.Approved():
		more, err := l.review(ctx, b, first)
		return append(outs, more...), err
	case b.approve && first.State == Proven && first.Proof.Base == b.tip && slices.Equal(first.Proof.Places, []string{first.Place}):
		b.links = []link{{e: first, parent: b.tip, commit: first.Proof.Candidate, tree: first.Proof.Tree}}
		more, err := l.landPrefix(ctx, b, 0, 1, first.Proof)
		return append(outs, more...), err
	}
	for _, e := range mine {
		if len(b.links) == b.size || b.approve && !e.Approved() {
			continue
		}
		o, err := l.chain(ctx, b, e)
		if err != nil {
			return outs, fmt.Errorf("%s: %w", e.Place, err)
		}
		if o != nil {
			outs = append(outs, *o)
		}
	}
	if len(b.links) == 0 {
		return outs, nil
	}
	l.r.FaultAt("land:candidate")
	more, err := l.bisect(ctx, b)
	return append(outs, more...), err
}

// newBatch reads the first queued entry's target: its tip, its checks and
// settings, its checkout; and that target's entries, bottom first, with
// those that wait for the work below them (nil batch when all wait).
func (l *Lander) newBatch(ctx context.Context, queued []*Entry) (*batch, []*Entry, []Outcome, error) {
	first := queued[0]
	t, err := l.targetTip(ctx, first.Target)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", first.Place, err)
	}
	if t.remote != "" {
		// One lander at a time on a shared target (Q11): held, or renewed,
		// before each batch; its tip is read again once held.
		if err := l.holdOrWait(ctx, t.remote, first.Target); err != nil {
			return nil, nil, nil, err
		}
		delete(l.tips, first.Target)
		if t, err = l.targetTip(ctx, first.Target); err != nil {
			return nil, nil, nil, err
		}
	}
	cfg, err := l.r.Config(ctx, t.tip)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(cfg.Land) == 0 {
		return nil, nil, nil, &stage.RefusedError{Place: first.Place, Reason: "no check is declared ([land] check in " + stage.ConfigPath + " on " + first.Target +
			"): the lander lands only what a check passed on the target's tip"}
	}
	mine := slices.DeleteFunc(slices.Clone(queued), func(e *Entry) bool { return e.Target != first.Target })
	mine, waiting, err := l.stacks(ctx, t.tip, mine)
	if err != nil || len(mine) == 0 {
		return nil, nil, waiting, err
	}

	b := &batch{target: first.Target, tip: t.tip, checks: cfg.Land, caches: cfg.LandCaches, timeout: cfg.LandTimeout, remote: t.remote, squash: cfg.LandSquash, approve: t.approve, size: cfg.LandBatch}
	if b.remote == "" {
		if b.checkout, err = l.checkout(ctx, mine[0]); err != nil {
			return nil, nil, waiting, err
		}
	}
	return b, mine, waiting, nil
}

// review proves entry e alone on batch b's tip, for a reviewer (Q7):
// green, it is proven and waits for its approval there; red, it goes back.
func (l *Lander) review(ctx context.Context, b *batch, e *Entry) ([]Outcome, error) {
	if o, err := l.chain(ctx, b, e); err != nil || o != nil {
		return outcomes(o), err
	}
	p, err := l.prove(ctx, b, 0, 0)
	if err != nil {
		return nil, err
	}
	state, reason := Proven, ""
	if !p.Passed {
		state, reason = Returned, redReason(b, b.links[0], p)
	}
	o, err := l.settleOne(ctx, e, state, reason, nil, p)
	return outcomes(o), err
}

func outcomes(o *Outcome) []Outcome {
	if o == nil {
		return nil
	}
	return []Outcome{*o}
}

// chain adds entry e to batch b, its tip merged onto the batch's last
// candidate. An entry whose tip is on the target already, or whose merge
// onto the target's tip conflicts, is returned (Q4); one that conflicts
// only with an entry before it in the batch waits for a later batch.
func (l *Lander) chain(ctx context.Context, b *batch, e *Entry) (*Outcome, error) {
	repo := l.r.Git
	if in, err := repo.IsAncestor(ctx, e.Tip, b.tip); err != nil {
		return nil, err
	} else if in {
		return l.settleOne(ctx, e, Returned, fmt.Sprintf("its tip %.12s is on %s already: nothing to land", e.Tip, e.Target), nil, nil)
	}
	parent := b.tip
	if n := len(b.links); n > 0 {
		parent = b.links[n-1].commit
	}
	tree, conflicts, err := repo.MergedTree(ctx, parent, e.Tip)
	if err != nil {
		return nil, err
	}
	if len(conflicts) > 0 && parent != b.tip {
		if _, conflicts, err = repo.MergedTree(ctx, b.tip, e.Tip); err != nil || len(conflicts) == 0 {
			return nil, err // it waits: it conflicts only with an entry before it
		}
	}
	if len(conflicts) > 0 {
		return l.settleOne(ctx, e, Returned, fmt.Sprintf("its merge onto %s at %.12s conflicts", e.Target, b.tip), conflicts, nil)
	}
	commit, nothing, err := l.linkCommit(ctx, b, e, parent, tree)
	if err != nil {
		return nil, err
	}
	if nothing {
		return l.settleOne(ctx, e, Returned, fmt.Sprintf("its change is on %s already: nothing to land", e.Target), nil, nil)
	}
	b.links = append(b.links, link{e: e, parent: parent, commit: commit, tree: tree})
	return nil, nil
}

// linkCommit commits tree, entry e's tip merged onto parent: a merge of
// the two, or where the batch squashes, one commit on parent whose message
// lists the entry's commits. nothing: squashed, it changes nothing.
func (l *Lander) linkCommit(ctx context.Context, b *batch, e *Entry, parent, tree string) (commit string, nothing bool, err error) {
	repo := l.r.Git
	msg := fmt.Sprintf("Land %s onto %s\n\ngit flume land: %.12s merged onto %.12s", e.Place, e.Target, e.Tip, parent)
	if !b.squash {
		commit, err = repo.CommitTreeWith(ctx, tree, msg, parent, e.Tip)
		return commit, false, err
	}
	if was, err := repo.ResolveRef(ctx, parent+"^{tree}"); err != nil || was == tree {
		return "", err == nil, err
	}
	subjects, err := repo.Subjects(ctx, parent, e.Tip, 50)
	if err != nil {
		return "", false, err
	}
	msg = fmt.Sprintf("Land %s onto %s\n\n%s\n\ngit flume land: %.12s squashed onto %.12s", e.Place, e.Target, strings.Join(subjects, "\n"), e.Tip, parent)
	commit, err = repo.CommitTreeWith(ctx, tree, msg, parent)
	return commit, false, err
}

// bisect proves batch b's whole chain and lands it when green (Q3, Q5).
// A red chain is bisected by its prefixes: a prefix proven green lands
// at once, from the tip the batch last moved the target to, and the
// first entry whose prefix is red goes back with that proof: its merge
// onto the tip the target now has is red. Of n entries, it is named in at
// most ⌈log2 n⌉ + 1 check runs; those after it wait for the next batch,
// proven on the new tip without it.
func (l *Lander) bisect(ctx context.Context, b *batch) ([]Outcome, error) {
	red, err := l.prove(ctx, b, 0, len(b.links)-1)
	if err != nil {
		return nil, err
	}
	if red.Passed {
		return l.landPrefix(ctx, b, 0, len(b.links), red)
	}
	var outs []Outcome
	lo, hi := 0, len(b.links)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		p, err := l.prove(ctx, b, lo, mid-1)
		if err != nil {
			return outs, err
		}
		if !p.Passed {
			hi, red = mid, p
			continue
		}
		landed, err := l.landPrefix(ctx, b, lo, mid, p)
		outs = append(outs, landed...)
		if err != nil || landed[0].Voided {
			return outs, err
		}
		lo = mid
	}
	culprit := b.links[lo]
	reason := redReason(b, culprit, red)
	if len(b.links) > 1 {
		reason += fmt.Sprintf(", found by bisecting a batch of %d in %d check runs", len(b.links), b.runs)
	}
	o, err := l.settleOne(ctx, culprit.e, Returned, reason, nil, red)
	return append(outs, outcomes(o)...), err
}

// redReason says why a red proof of link k returns its entry.
func redReason(b *batch, k link, red *Proof) string {
	last := red.Checks[len(red.Checks)-1]
	if last.TimedOut {
		return fmt.Sprintf("check %q timed out after %s on its merge onto %s at %.12s", strings.Join(last.Argv, " "), b.timeout, b.target, k.parent)
	}
	return fmt.Sprintf("check %q exited %d on its merge onto %s at %.12s", strings.Join(last.Argv, " "), last.Exit, b.target, k.parent)
}

// landPrefix lands the entries of links [lo, hi) of batch b, whose last
// candidate proof p passed: the target moves from the batch's tip to that
// candidate in the transaction that records each entry landed with the
// proof (Q3). A target that moved voids the proof, and the entries stay
// queued.
func (l *Lander) landPrefix(ctx context.Context, b *batch, lo, hi int, p *Proof) ([]Outcome, error) {
	l.r.FaultAt("land:proven")
	entries := make([]*Entry, 0, hi-lo)
	for _, k := range b.links[lo:hi] {
		entries = append(entries, k.e)
	}
	var landed []*Entry
	var err error
	if b.remote != "" {
		landed, err = l.push(ctx, b, entries, p)
	} else {
		landed, err = l.settle(ctx, entries, Landed, "", nil, p, git.RefUpdate{Op: git.Update, Name: "refs/heads/" + b.target, New: p.Candidate, Old: b.tip})
	}
	var moved *git.ConflictError
	var lost *refs.ConflictError
	var rejected *git.PushRejectedError
	if errors.As(err, &moved) || errors.As(err, &lost) || errors.As(err, &rejected) {
		// The target moved since the batch read it: this proof is of
		// another tip, and void (Q3). The entries stay queued.
		outs := make([]Outcome, 0, len(entries))
		for _, e := range entries {
			_, verr := l.edit(ctx, e.Place, func(cur *Entry) (string, error) {
				cur.Voided++
				if cur.State == Landing {
					cur.State = Queued // the lease refused the push: nothing landed
				}
				return fmt.Sprintf("land %s: proof on %.12s void, %s moved", cur.Place, b.tip, cur.Target), nil
			})
			if verr != nil {
				return outs, verr
			}
			outs = append(outs, Outcome{Entry: e, Voided: true})
		}
		return outs, nil
	}
	if err != nil {
		return nil, err
	}
	from := b.tip
	b.tip = p.Candidate
	if b.checkout != nil {
		l.r.FaultAt("land:moved")
		if err := l.r.Git.SwitchTree(ctx, b.checkout.Path, from, p.Candidate); err != nil {
			return nil, fmt.Errorf("%s moved to %.12s, but its checkout did not follow: %w", b.target, p.Candidate, err)
		}
	}
	outs := make([]Outcome, len(landed))
	for i, e := range landed {
		outs[i] = Outcome{Entry: e}
	}
	return outs, nil
}

// prove checks the candidate of batch b's link i, which carries the
// entries of links [from, i] onto the batch's tip, in a throwaway
// worktree: the checks one after another until one fails, each with the
// clean environment of a repository step (X4) and the lander's variables.
func (l *Lander) prove(ctx context.Context, b *batch, from, i int) (*Proof, error) {
	repo, env := l.r.Git, l.r.Env
	k := b.links[i]
	b.runs++
	if b.remote != "" {
		// Each check run renews the claim on the target's queue (Q11).
		if err := l.hold(ctx, b.remote, b.target); err != nil {
			return nil, err
		}
	}
	dir := filepath.Join(stage.LandChecks(repo.CommonDir), k.e.Place)
	// A worktree a lander killed mid-check left is removed first.
	_ = repo.RemoveWorktree(ctx, dir, true)
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	if err := repo.AddDetachedWorktree(ctx, dir, k.commit); err != nil {
		return nil, err
	}
	defer func() { _ = repo.RemoveWorktree(context.WithoutCancel(ctx), dir, true) }()
	proof := &Proof{Base: b.tip, Candidate: k.commit, Tree: k.tree, Passed: true, At: env.NowUTC()}
	for _, in := range b.links[from : i+1] {
		proof.Places = append(proof.Places, in.e.Place)
	}
	digest := sha256.New()
	fmt.Fprintf(digest, "tree %s\n", k.tree)
	run, err := l.runOf(ctx, k.e.Place, dir, digest)
	if err != nil {
		return nil, err
	}
	vars := proc.StepEnv(env.CallerEnv, append([]string{"FLUME_PLACE=" + k.e.Place, "FLUME_BRANCH=" + k.e.Branch, "FLUME_TARGET=" + b.target,
		"FLUME_BASE=" + b.tip, "FLUME_CANDIDATE=" + k.commit, "FLUME_PLACES=" + strings.Join(proof.Places, " ")}, run...)...)
	for _, v := range vars {
		fmt.Fprintf(digest, "env %s\n", v)
	}
	if err := l.runChecks(ctx, b, dir, vars, proof, digest); err != nil {
		return nil, err
	}
	proof.Digest = hex.EncodeToString(digest.Sum(nil))
	return proof, nil
}

// runChecks runs batch b's checks in worktree dir with environment vars,
// behind their boundary (Q13), one after another until one fails, each
// with its exit and the end of its output in proof, and what was run in
// its digest.
func (l *Lander) runChecks(ctx context.Context, b *batch, dir string, vars []string, proof *Proof, digest io.Writer) error {
	boundary, wrap, err := l.checkBoundary(dir, b.caches, vars)
	if err != nil {
		return err
	}
	proof.Boundary = boundary
	fmt.Fprintf(digest, "boundary %s\n", boundary)
	for _, st := range b.checks {
		argv, err := st.Argv()
		if err != nil {
			return fmt.Errorf("check %q: %w", st.Command, err)
		}
		fmt.Fprintf(digest, "check %q\n", argv)
		var out bytes.Buffer
		start := time.Now()
		line := append(wrap[:len(wrap):len(wrap)], argv...)
		cctx, cancel := context.WithTimeout(ctx, b.timeout) // [land] timeout (Q4)
		code, err := proc.RunStep(cctx, proc.Cmd{Path: line[0], Args: line[1:], Dir: dir, Env: vars, Stdout: &out, Stderr: &out})
		timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		if timedOut {
			err = fmt.Errorf("timed out after %s ([land] timeout): ended with every process it started", b.timeout)
		} else if ctx.Err() != nil {
			return ctx.Err() // the lander itself was stopped: no proof
		}
		if err != nil {
			fmt.Fprintf(&out, "%v\n", err)
		}
		proof.Checks = append(proof.Checks, Check{Argv: argv, Exit: code, DurationMs: time.Since(start).Milliseconds(), Tail: tail(out.String()), TimedOut: timedOut})
		if code != 0 {
			proof.Passed = false
			break
		}
	}
	return nil
}

// settleOne records entry e's outcome.
func (l *Lander) settleOne(ctx context.Context, e *Entry, state, reason string, conflicts []string, proof *Proof) (*Outcome, error) {
	done, err := l.settle(ctx, []*Entry{e}, state, reason, conflicts, proof)
	if err != nil {
		return nil, err
	}
	return &Outcome{Entry: done[0]}, nil
}

// settle records entries' outcome in one transaction, with extra refs
// moved in it (the target, for a landing): each entry must still be
// queued at the tip the lander took it at.
func (l *Lander) settle(ctx context.Context, entries []*Entry, state, reason string, conflicts []string, proof *Proof, extra ...git.RefUpdate) ([]*Entry, error) {
	changes := make([]refs.Change, 0, len(entries))
	done := make([]*Entry, 0, len(entries))
	for _, e := range entries {
		rec, cur, err := read(ctx, l.r.Store, e.Place)
		if err != nil {
			return nil, err
		}
		if cur == nil || cur.State != Queued && cur.State != Proven && cur.State != Landing || cur.Tip != e.Tip {
			return nil, fmt.Errorf("%s: its entry moved while it was proven: run land again", e.Place)
		}
		cur.State, cur.Reason, cur.Conflicts, cur.Proof = state, reason, conflicts, proof
		msg := fmt.Sprintf("land %s: returned: %s", cur.Place, reason)
		if state == Landed {
			msg = fmt.Sprintf("land %s: %s moved from %.12s to %.12s", cur.Place, cur.Target, proof.Base, proof.Candidate)
		}
		changes = append(changes, refs.Change{Ref: Ref(e.Place), Old: rec, State: cur, Message: msg})
		done = append(done, cur)
	}
	reflog := "" // the target's own move says what landed and on which proof (Q4)
	if state == Landed && len(extra) > 0 {
		reflog = fmt.Sprintf("flume land %s: proven candidate %.12s on %.12s (proof %.12s)", placesOf(done), proof.Candidate, proof.Base, proof.Digest)
	}
	if _, err := l.r.Store.WriteLogged(ctx, reflog, changes, extra...); err != nil {
		return nil, err
	}
	return done, nil
}

// checkout is the worktree target is checked out in, if any. The lander
// brings it along to each tip it lands, as git brings a pushed-to checkout
// with receive.denyCurrentBranch=updateInstead (Q6): a person's checkout
// never shows a landing as changes to undo. One with changes of its own
// refuses the run: they are kept, and nothing lands under them.
func (l *Lander) checkout(ctx context.Context, first *Entry) (*git.Worktree, error) {
	repo := l.r.Git
	wt, err := repo.CheckedOut(ctx, "refs/heads/"+first.Target)
	if err != nil || wt == nil {
		return nil, err
	}
	dirty, err := repo.Dirty(ctx, wt.Path)
	if err != nil {
		return nil, err
	}
	if len(dirty) > 0 {
		return nil, &stage.RefusedError{Place: first.Place, Reason: fmt.Sprintf("%s is checked out at %s with changes (%s): they are kept, and nothing lands under them until they are committed or stashed",
			first.Target, wt.Path, dirty[0])}
	}
	return wt, nil
}

// follow brings along each checkout a lander killed between a move and
// its work tree left behind (Q6): a worktree on a target at a candidate
// this host landed, whose index is still the tree of the tip that
// landing replaced. git refuses where a file of the work tree holds a
// change of its own.
func (l *Lander) follow(ctx context.Context, entries []*Entry) error {
	landed := map[string]*Entry{}
	for _, e := range entries {
		if e.State == Landed && e.Host == l.r.Host {
			landed["refs/heads/"+e.Target+" "+e.Proof.Candidate] = e
		}
	}
	if len(landed) == 0 {
		return nil
	}
	repo := l.r.Git
	wts, err := repo.Worktrees(ctx)
	if err != nil {
		return err
	}
	for _, wt := range wts {
		e := landed[wt.Branch+" "+wt.Head]
		if e == nil {
			continue
		}
		idx, err := repo.IndexTree(ctx, wt.Path)
		if err != nil {
			continue // an index mid-merge: the checkout is dirty, and said so
		}
		if base, err := repo.ResolveRef(ctx, e.Proof.Base+"^{tree}"); err != nil || base != idx || base == e.Proof.Tree {
			continue
		}
		if err := repo.SwitchTree(ctx, wt.Path, e.Proof.Base, wt.Head); err != nil {
			return fmt.Errorf("%s's checkout at %s, left behind at %.12s by a killed lander: %w", e.Target, wt.Path, e.Proof.Base, err)
		}
	}
	return nil
}

// push lands entries on a shared remote (Q8): their intent recorded
// (landing, with the proof), then the target pushed from the batch's tip
// to the candidate with --force-with-lease, then the receipt (landed). A
// push the lease refused is a *git.PushRejectedError, the entries still
// landing: the caller voids them. Killed or cut off anywhere between,
// the next run settles each landing entry from what the remote holds
// (settleLanding).
func (l *Lander) push(ctx context.Context, b *batch, entries []*Entry, p *Proof) ([]*Entry, error) {
	if _, err := l.settle(ctx, entries, Landing, "", nil, p); err != nil {
		return nil, err
	}
	l.r.FaultAt("land:intent")
	err := l.r.Git.PushLeased(ctx, b.remote, []git.PushUpdate{{Ref: "refs/heads/" + b.target, Local: p.Candidate, Expect: b.tip}})
	if err != nil {
		return nil, err
	}
	l.r.FaultAt("land:pushed")
	landed, err := l.settle(ctx, entries, Landed, "", nil, p)
	if err != nil {
		return nil, err
	}
	l.r.FaultAt("land:receipt")
	return landed, l.bringLocal(ctx, b, landed, p)
}

// placesOf names entries' places, as a reflog message lists them.
func placesOf(entries []*Entry) string {
	places := make([]string, len(entries))
	for i, e := range entries {
		places[i] = e.Place
	}
	return strings.Join(places, " ")
}

// bringLocal brings the local target along to the candidate the lander
// pushed to the shared remote (Q8), as a pull would and as Q6 brings a
// checkout: moved by compare-and-swap, only from where it was behind the
// proof's base, and only when its checkout, if any, is clean; a local
// target ahead or apart, or checked out with changes, is the person's and
// stays. Then the stage's landing reads on the local target, and tidy's
// judging too.
func (l *Lander) bringLocal(ctx context.Context, b *batch, landed []*Entry, p *Proof) error {
	msg := fmt.Sprintf("flume land %s: brought along to %s on %s (proof %.12s)", placesOf(landed), b.target, b.remote, p.Digest)
	_, _, err := stage.BringAlong(ctx, l.r, b.target, p.Candidate, msg)
	return err
}

// settleLanding settles each landing entry of this host a run killed or
// cut off between its intent and its receipt left (Q8), from what the
// remote's target holds now: its candidate there, it landed; the target
// still at the proof's tip, the proven move is pushed again under the
// same lease; moved elsewhere, the proof is void and the entry queued,
// and no push of it can land any more (its lease names the old tip).
func (l *Lander) settleLanding(ctx context.Context, all []*Entry) ([]Outcome, error) {
	var done []Outcome
	for _, e := range all {
		if e.State != Landing || e.Host != l.r.Host {
			continue
		}
		for round := 0; ; round++ {
			l.tips = map[string]targetTip{}
			t, err := l.targetTip(ctx, e.Target)
			if err != nil {
				return done, fmt.Errorf("%s: %w", e.Place, err)
			}
			in, err := l.r.Git.IsAncestor(ctx, e.Proof.Candidate, t.tip)
			if err != nil {
				return done, err
			}
			b := &batch{target: e.Target, tip: e.Proof.Base, remote: t.remote}
			var settled []*Entry
			switch {
			case in:
				settled, err = l.settle(ctx, []*Entry{e}, Landed, "", nil, e.Proof)
			case t.tip == e.Proof.Base && t.remote != "" && round == 0:
				if settled, err = l.push(ctx, b, []*Entry{e}, e.Proof); errors.As(err, new(*git.PushRejectedError)) {
					continue // the remote moved meanwhile: read it again
				}
			default:
				var cur *Entry
				cur, err = l.edit(ctx, e.Place, func(cur *Entry) (string, error) {
					cur.State, cur.Voided = Queued, cur.Voided+1
					return fmt.Sprintf("land %s: its push did not land, %s is at %.12s: queued again", cur.Place, cur.Target, t.tip), nil
				})
				done = append(done, Outcome{Entry: cur, Voided: true})
			}
			if err != nil {
				return done, fmt.Errorf("%s: %w", e.Place, err)
			}
			for _, s := range settled {
				done = append(done, Outcome{Entry: s})
			}
			break
		}
	}
	return done, nil
}

// runOf gives a check of place id's candidate, in the worktree dir, what
// the place was given to run (Q2): its run variables (leased ports,
// compose project name) and copies of the env files copied into it, each
// hashed into the proof's digest. Nothing when the place declared no
// [run] or is another host's.
func (l *Lander) runOf(ctx context.Context, id, dir string, digest io.Writer) ([]string, error) {
	_, p, err := record.ReadPlace(ctx, l.r.Store, id)
	if err != nil || p.Run == nil || p.Host != l.r.Host {
		return nil, nil
	}
	// The place's files are its agent's to change: read inside its
	// worktree only (no path or link out of it), regular files only.
	root, err := os.OpenRoot(p.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	defer func() { _ = root.Close() }()
	// The candidate's tree is the branch's: what it holds (a link where
	// an env file's folder goes) never takes a copy out of the worktree.
	into, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = into.Close() }()
	for _, f := range p.Run.Env {
		if f.Skipped != "" {
			continue
		}
		if fi, err := root.Lstat(f.Path); err != nil || !fi.Mode().IsRegular() {
			continue // gone, or no longer a file: the check runs without it
		}
		data, err := root.ReadFile(f.Path)
		if err != nil {
			return nil, fmt.Errorf("%s: env file %s: %w", id, f.Path, err)
		}
		if into.MkdirAll(filepath.Dir(f.Path), 0o755) != nil || into.WriteFile(f.Path, data, 0o600) != nil {
			continue // the candidate's tree leaves no room for it inside: the check runs without it
		}
		fmt.Fprintf(digest, "file %s %x\n", f.Path, sha256.Sum256(data))
	}
	return record.RunVars(p), nil
}
