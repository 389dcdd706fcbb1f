package land

import (
	"context"

	"github.com/git-flume/git-flume/stage/record"
)

// stacks orders one target's queued entries bottom first (Q10): a place
// launched on another place's work that has not landed (its base is not
// on the target's tip) comes after the entry that carries that work, so
// each lands with a proof of its own merge onto what is below it. One
// whose work below is not queued with it waits, unproven: landing it
// would land that work without a proof of its own.
func (l *Lander) stacks(ctx context.Context, tip string, queued []*Entry) ([]*Entry, []Outcome, error) {
	bases := make(map[string]string, len(queued))
	var commits []string
	for _, e := range queued {
		_, p, err := record.ReadPlace(ctx, l.r.Store, e.Place)
		if err != nil {
			continue // a place dropped since it was submitted is judged by its tip alone
		}
		bases[e.Place] = p.Base
		commits = append(commits, p.Base)
	}
	if len(commits) == 0 {
		return queued, nil, nil
	}
	off, err := l.r.Git.NotOn(ctx, commits, tip)
	if err != nil || len(off) == 0 {
		return queued, nil, err
	}
	below := map[string]*Entry{}
	var waiting []Outcome
	for _, e := range queued {
		base := bases[e.Place]
		if !off[base] {
			continue
		}
		for _, a := range queued {
			if a == e {
				continue
			}
			if in, err := l.r.Git.IsAncestor(ctx, base, a.Tip); err != nil {
				return nil, nil, err
			} else if in {
				below[e.Place] = a
				break
			}
		}
		if below[e.Place] == nil {
			waiting = append(waiting, Outcome{Entry: e, Waits: "it is based on work not on " + e.Target + " that no entry queued with it carries: that work lands first, with its own proof"})
		}
	}
	// An entry on one that waits waits too.
	for changed := true; changed; {
		changed = false
		for _, e := range queued {
			if a := below[e.Place]; a != nil && waits(waiting, a) && !waits(waiting, e) {
				waiting = append(waiting, Outcome{Entry: e, Waits: "it is based on " + a.Place + "'s work, which waits"})
				changed = true
			}
		}
	}
	return bottomFirst(queued, below, waiting), waiting, nil
}

func waits(waiting []Outcome, e *Entry) bool {
	for _, o := range waiting {
		if o.Entry == e {
			return true
		}
	}
	return false
}

// bottomFirst is queued in its order, each entry after the one below it,
// without those that wait.
func bottomFirst(queued []*Entry, below map[string]*Entry, waiting []Outcome) []*Entry {
	var out []*Entry
	done := map[*Entry]bool{}
	var visit func(e *Entry)
	visit = func(e *Entry) {
		if done[e] || waits(waiting, e) {
			return
		}
		done[e] = true // ancestry has no cycles; this also ends one a record could fake
		if a := below[e.Place]; a != nil {
			visit(a)
		}
		out = append(out, e)
	}
	for _, e := range queued {
		visit(e)
	}
	return out
}
