package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// AdoptOptions are an adopt's.
type AdoptOptions struct {
	// Place is the place of a lost host; Runner the runner that carries
	// it on; Name the new place's name (default: the old one's, -2, -3 …).
	Place, Runner, Name string
	// Why is said in the new place's record, after what the records say
	// of the old host.
	Why string
	// Force adopts a place whose host was heard within its limit.
	Force bool
	// Remote is the shared remote; Wait bounds the wait for the new
	// place's record, as a launch --on's.
	Remote string
	Wait   time.Duration
}

// Adopt starts place o.Place of another host again on runner o.Runner
// (M5): a new place, of the same kind, target, agent and brief, whose
// branch starts from the work its host last shared
// (refs/flume-work/<place> on the remote: the branch head, with what was
// uncommitted then committed over it when there was any), launched as
// launch --on launches. The new place's record says which place it adopts,
// from which work, why, when and by whom; status shows the old place lost
// by it. Never silent: a place whose host was heard within its limit is
// refused unless forced, and so is one adopted already.
func Adopt(ctx context.Context, r *stage.Repository, o AdoptOptions) (*record.Place, error) {
	_, old, err := record.ReadPlace(ctx, r.Store, o.Place)
	if err != nil {
		return nil, err
	}
	now := r.ClockNow()
	why, err := adoptable(ctx, r, old, o.Force, now)
	if err != nil {
		return nil, err
	}
	repo, ref := r.Git, record.WorkPrefix+old.ID
	if err := repo.FetchRefs(ctx, o.Remote, false, "+"+ref+":"+ref); err != nil {
		return nil, &stage.RefusedError{Place: old.ID, Reason: fmt.Sprintf("no work of it was shared on %s (%s): nothing to start again from", o.Remote, ref)}
	}
	work, err := repo.ResolveRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	base, err := workBase(ctx, r, work)
	if err != nil {
		return nil, fmt.Errorf("%s: its shared work %.12s: %w", old.ID, work, err)
	}
	name := o.Name
	if name == "" {
		if name, err = freeName(ctx, r.Store, old); err != nil {
			return nil, err
		}
	}
	if o.Why != "" {
		why += "; " + o.Why
	}
	brief := old.Brief + fmt.Sprintf("\n\n(This carries on %s, whose host %s was lost: %s. Its branch starts from the work that host last shared; "+
		"what was uncommitted there is the last commit, %.12s.)", old.ID, old.Host, why, base)
	return Launch(ctx, r, Options{Runner: o.Runner, Kind: old.PlaceKind, Name: name, Brief: brief, From: base, Target: old.Target,
		Agent: old.Agent, Remote: o.Remote, Wait: o.Wait,
		adopts: &record.Adoption{Place: old.ID, Host: old.Host, Work: work, Why: why, At: now, By: r.Host}})
}

// adoptable says why place old may be adopted (its host lost: unheard
// past its limit, or never heard), or refuses it.
func adoptable(ctx context.Context, r *stage.Repository, old *record.Place, force bool, now time.Time) (string, error) {
	refuse := func(reason string) (string, error) {
		return "", &stage.RefusedError{Place: old.ID, Reason: reason}
	}
	switch {
	case old.Host == r.Host:
		return refuse("a place of this host: retry it here, or drop it")
	case old.Dropped != nil:
		return refuse("it was dropped: nothing to carry on")
	case old.Phase != record.PhaseMade:
		return refuse("it is " + old.Phase + ": nothing to carry on")
	}
	recs, _, err := r.Store.List(ctx, record.PlacePrefix)
	if err != nil {
		return "", err
	}
	for _, p := range record.DecodePlaces(recs) {
		if p.Adopts != nil && p.Adopts.Place == old.ID {
			return refuse(fmt.Sprintf("adopted already, as %s on %s", p.ID, p.Host))
		}
	}
	rec, err := r.Store.Read(ctx, record.HostRef(old.Host))
	if errors.Is(err, refs.ErrNotFound) {
		return "host " + old.Host + " never heard from in the records", nil
	}
	var h record.Host
	if err == nil {
		err = rec.Decode(&h)
	}
	if err != nil {
		return "", err
	}
	heard := h.Heard.UTC().Format("2006-01-02 15:04:05 UTC")
	if !h.Silent(now) {
		if !force {
			return refuse(fmt.Sprintf("host %s was heard at %s, within its limit of %s: it may be at work still "+
				"(git flume sync to hear it again; --force adopts it anyway, and two agents then work on it)", old.Host, heard, h.SilentAfter()))
		}
		return fmt.Sprintf("adopted by force though host %s was heard at %s", old.Host, heard), nil
	}
	return fmt.Sprintf("host %s unheard since %s, past its limit of %s", old.Host, heard, h.SilentAfter()), nil
}

// workBase is where an adopting place's branch starts from shared work
// work: the branch head it was taken over, or, when the worktree had
// changes then, work itself (those changes committed over that head).
func workBase(ctx context.Context, r *stage.Repository, work string) (string, error) {
	head, err := r.Git.ResolveCommit(ctx, work+"^1")
	if err != nil {
		return "", err
	}
	workTree, err := r.Git.TreeOf(ctx, work)
	if err != nil {
		return "", err
	}
	headTree, err := r.Git.TreeOf(ctx, head)
	if err != nil {
		return "", err
	}
	if workTree == headTree {
		return head, nil
	}
	return work, nil
}

// freeName is the first of old's name with -2, -3 … that names no
// place in the records.
func freeName(ctx context.Context, s *refs.Store, old *record.Place) (string, error) {
	for n := 2; n < 100; n++ {
		name := fmt.Sprintf("%s-%d", old.Name, n)
		if _, _, err := record.ReadPlace(ctx, s, old.PlaceKind+"--"+name); errors.As(err, new(*record.NotFoundError)) {
			return name, nil
		}
	}
	return "", &stage.RefusedError{Place: old.ID, Reason: "no free name from -2 to -99: name it with --name"}
}
