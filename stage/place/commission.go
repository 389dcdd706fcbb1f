// A commission: a place launched from inside a place whose role delegates
// to its kind becomes its child. launch checks and records it;
// tidy waits for an open child.

package place

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
)

// commission is the place a launch is delegated from, as read.
type commission struct {
	rec *refs.Record
	p   *record.Place
}

// checkDelegation refuses a launch made from inside a place (the caller's
// FLUME_PLACE) unless the role of that place's current stage delegates to
// the kind (A9), and unless that place is at home here with no open
// direct child. It returns the commissioner, nil for a launch
// from a person's shell.
func checkDelegation(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, kind string) (*commission, error) {
	from := stage.CallerPlace(env)
	if from == "" {
		from = stage.PlaceAt(ctx, store, repo)
	}
	if from == "" {
		return nil, nil
	}
	refuse := func(why string) error {
		return &stage.RefusedError{Place: from, Reason: "a launch of a " + kind + " from inside this place is refused: " + why}
	}
	rec, p, err := record.ReadPlace(ctx, store, from)
	if err != nil {
		return nil, refuse("it is not a place of this repository")
	}
	if p.Current < len(p.Stages) && p.Stages[p.Current].State == record.StagePending {
		// the role is its stage's once it starts; saying it
		// names none misled.
		st := p.Stages[p.Current]
		return nil, refuse(fmt.Sprintf("its stage %s has not started: a child is launched by that stage's agent once it runs (git flume advance %s starts it)", st.Name, p.ID))
	}
	if p.Current >= len(p.Stages) || p.Stages[p.Current].Role == "" {
		return nil, refuse("its stage names no role that delegates")
	}
	role, err := stage.LoadRole(ctx, repo, p.ConfigRev(), p.Stages[p.Current].Role)
	if err != nil {
		return nil, refuse(err.Error())
	}
	if !slices.Contains(role.DelegatesTo, kind) {
		return nil, refuse(fmt.Sprintf("role %s delegates to %v, not %s", role.Name, role.DelegatesTo, kind))
	}
	if p.Phase != record.PhaseMade {
		return nil, refuse("it is " + p.Phase)
	}
	if err := stage.CheckHome(ctx, env, repo, p); err != nil {
		return nil, refuse(err.Error())
	}
	if open, err := OpenChild(ctx, store, p); err != nil {
		return nil, err
	} else if open != "" {
		return nil, refuse(fmt.Sprintf("its delegated place %s is still open: accept, reopen, unblock or roll it back first", open))
	}
	return &commission{rec: rec, p: p}, nil
}

// OpenChild is the direct child of p whose delegation is still open, ""
// when there is none. A child named in p's record that has no record (a
// launch cleaned up before it made anything) is not open.
func OpenChild(ctx context.Context, store *refs.Store, p *record.Place) (string, error) {
	for _, id := range slices.Backward(p.Children) {
		_, c, err := record.ReadPlace(ctx, store, id)
		var nf *record.NotFoundError
		if errors.As(err, &nf) {
			continue
		}
		if err != nil {
			return "", err
		}
		if c.Parent != nil && c.Parent.Parent == p.ID && record.DelegationOpen(c) {
			return id, nil
		}
	}
	return "", nil
}

// delegate readies a child about to be made as c's delegation: it starts
// from the commissioner's branch head and lands on its branch.
func delegate(ctx context.Context, env *stage.Env, repo *git.Repo, c *commission, opts LaunchOptions) (target, base string, d *record.Delegation, err error) {
	if opts.Target != "" && opts.Target != c.p.Branch {
		return "", "", nil, fmt.Errorf("a delegated place lands on its commissioner's branch %s, not --target %s", c.p.Branch, opts.Target)
	}
	if opts.From != "" {
		return "", "", nil, fmt.Errorf("a delegated place starts from its commissioner's branch head; --from %s is refused", opts.From)
	}
	head, err := repo.ResolveRef(ctx, c.p.BranchRef())
	if err != nil {
		return "", "", nil, fmt.Errorf("commissioner %s: branch %s: %w", c.p.ID, c.p.Branch, err)
	}
	d = &record.Delegation{Parent: c.p.ID, Stage: c.p.Current, Run: c.p.Stages[c.p.Current].Runs, At: env.NowUTC()}
	return c.p.Branch, head, d, nil
}

// keepCommissioner keeps the commissioner's work tree, when dirty, as the
// delegation's start (W3), right before the child is made: a launch
// refused earlier leaves no snapshot behind.
func keepCommissioner(ctx context.Context, repo *git.Repo, c *commission, d *record.Delegation) error {
	start, err := engine.TakeSnapshot(ctx, repo, c.p, &c.p.Stages[c.p.Current], "delegate")
	d.Start = start
	return err
}

// commissionChange is the commissioner's side of a child's first
// transaction: the child's id added to its record, from the record as
// read now. A commissioner that meanwhile delegated elsewhere refuses.
func commissionChange(ctx context.Context, store *refs.Store, child *record.Place) (refs.Change, error) {
	rec, p, err := record.ReadPlace(ctx, store, child.Parent.Parent)
	if err != nil {
		return refs.Change{}, err
	}
	if open, err := OpenChild(ctx, store, p); err != nil {
		return refs.Change{}, err
	} else if open != "" && open != child.ID {
		return refs.Change{}, &stage.RefusedError{Place: p.ID, Reason: fmt.Sprintf("its delegated place %s is still open", open)}
	}
	if !slices.Contains(p.Children, child.ID) {
		p.Children = append(p.Children, child.ID)
	}
	return record.PlaceChange(rec, p, fmt.Sprintf("delegate %s: to %s", p.ID, child.ID)), nil
}
