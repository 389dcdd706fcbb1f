package stage

import (
	"context"
	"errors"
	"fmt"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
)

// BringAlong moves the local branch target forward to commit to, as a
// pull would (Q8, M2): by compare-and-swap, only from a value behind to,
// and only when its checkout, if it has one, is clean; the checkout
// follows. reflog is the move's message. It returns why it left the
// branch where it is ("" when it moved it, or it was at to already) and
// whether it was behind: one ahead or apart, or checked out with changes,
// is the person's.
func BringAlong(ctx context.Context, r *Repository, target, to, reflog string) (why string, behind bool, err error) {
	repo, ref := r.Git, "refs/heads/"+target
	at, err := repo.RefValue(ctx, ref)
	switch {
	case err != nil:
		return "", false, err
	case at == "" || at == to:
		return "", false, nil
	}
	if behind, err := repo.IsAncestor(ctx, at, to); err != nil || !behind {
		return fmt.Sprintf("%s here (%.12s) is not behind %.12s: it is yours, kept", target, at, to), false, err
	}
	wt, err := repo.CheckedOut(ctx, ref)
	if err != nil {
		return "", true, err
	}
	if wt != nil {
		dirty, err := repo.Dirty(ctx, wt.Path)
		if err != nil || len(dirty) > 0 {
			return fmt.Sprintf("%s is checked out with changes at %s: kept at %.12s, behind %.12s (git pull there)", target, wt.Path, at, to), true, err
		}
	}
	if _, err := r.Store.WriteLogged(ctx, reflog, nil, git.RefUpdate{Op: git.Update, Name: ref, New: to, Old: at}); err != nil {
		if errors.As(err, new(*refs.ConflictError)) {
			return fmt.Sprintf("%s moved meanwhile: kept", target), true, nil
		}
		return "", true, err
	}
	if wt != nil {
		if err := repo.SwitchTree(ctx, wt.Path, at, to); err != nil {
			return "", true, fmt.Errorf("%s was brought along to %.12s, but its checkout did not follow: %w", target, to, err)
		}
	}
	return "", true, nil
}
