// What an operator's verb names, and how a verb is refused.

package stage

import (
	"fmt"

	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage/record"
)

// RefusedError is an operator action refused before anything was typed or
// ended (A4, A5).
type RefusedError struct {
	Place  string
	Reason string
}

func (e *RefusedError) Error() string { return fmt.Sprintf("%s: %s", e.Place, e.Reason) }

// PlaceOptions name the place an operator verb acts on and who acts.
type PlaceOptions struct {
	// Repo is any directory inside the place's repository.
	Repo string
	// Place is the place's id, <kind>--<name>.
	Place string
	// Gate is the acting session and whether it takes the place over
	// (R8).
	Gate GateOptions
	// Force ends a running agent first (retry, go-on, rollback) or one in
	// the middle of its turn (stop).
	Force bool
}

// OwnedHere refuses a place another host owns (R7): only its owner writes it.
func OwnedHere(env *Env, p *record.Place) error {
	if p.Host != env.Host {
		return &RefusedError{Place: p.ID, Reason: fmt.Sprintf("owned by host %s, and only its owner changes it: act on %s", p.Host, p.Host)}
	}
	return nil
}

// GateOptions identify the caller of a gate (R8).
type GateOptions struct {
	Session  refs.Session
	TakeOver bool
}
