// Claims (R8): binding a session to a place, and letting it go, as the
// `use` and `release` commands and any other caller do them.

package place

import (
	"context"

	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage/record"
)

// ClaimOptions names a place and the session that claims or releases it.
type ClaimOptions struct {
	Place    string
	Session  refs.Session
	TakeOver bool // act even though another live session claims it
	// Remote, when set, makes the claim exclusive across hosts: it is held
	// only once that remote took it (R8), and released there too.
	Remote string
}

// Use binds o.Session to the place (R8). With a Remote the claim is pushed
// create-only and rolled back here when the remote refused it.
func (ps *Places) Use(ctx context.Context, o ClaimOptions) (refs.Claim, error) {
	store := ps.r.Store
	if _, _, err := record.ReadPlace(ctx, store, o.Place); err != nil {
		return refs.Claim{}, err
	}
	claim, err := store.Use(ctx, o.Place, o.Session, o.TakeOver)
	if err != nil || o.Remote == "" {
		return claim, err
	}
	rec, err := store.Read(ctx, refs.ClaimRef(o.Place))
	if err != nil {
		return claim, err
	}
	return claim, store.PushClaim(ctx, o.Remote, o.Place, rec)
}

// Release lets o.Session's claim on the place go (R8), on the Remote too
// when one is named.
//
// released is false where there was no claim here to let go; a place
// that does not exist either is an error, as it is to Use.
func (ps *Places) Release(ctx context.Context, o ClaimOptions) (released bool, err error) {
	store := ps.r.Store
	if released, err = store.Release(ctx, o.Place, o.Session, o.TakeOver); err != nil {
		return false, err
	}
	if !released {
		if _, _, err := record.ReadPlace(ctx, store, o.Place); err != nil {
			return false, err
		}
	}
	if o.Remote == "" {
		return released, nil
	}
	return released, store.ReleasePushed(ctx, o.Remote, o.Place)
}
