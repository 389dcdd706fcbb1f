package refs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds a read–decide–write loop.
type RetryPolicy struct {
	// Attempts is how many times the step runs at most.
	Attempts int
	// Base and Max bound the jittered back-off between attempts: the n-th
	// wait is uniform in [0, min(Max, Base·2ⁿ)).
	Base, Max time.Duration
	// Again reports whether an error is worth another attempt; nil means
	// a lost compare-and-swap race (*ConflictError) only.
	Again func(error) bool
}

// lostRace is a lost compare-and-swap race: the default reason to try
// again.
func lostRace(err error) bool {
	var conflict *ConflictError
	return errors.As(err, &conflict)
}

// DefaultRetry suits a handful of processes contending for one record.
var DefaultRetry = RetryPolicy{Attempts: 200, Base: 2 * time.Millisecond, Max: 100 * time.Millisecond}

// Retry runs step until it returns nil or an error not worth another
// attempt (Again; by default anything but a lost race, *ConflictError), or
// until the policy's attempts run out; then it returns the last error. A held lock is not retried here: the write already waited
// for it as long as it looked live, and one left behind is the operator's
// to remove.
func (p RetryPolicy) Retry(ctx context.Context, step func(context.Context) error) error {
	var err error
	for n := 0; n < p.Attempts; n++ {
		if n > 0 {
			ceil := p.Base << min(n, 20)
			if ceil > p.Max || ceil <= 0 {
				ceil = p.Max
			}
			select {
			case <-time.After(rand.N(ceil)):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err = step(ctx)
		again := p.Again
		if again == nil {
			again = lostRace
		}
		if err == nil || !again(err) {
			return err
		}
	}
	return fmt.Errorf("gave up after %d attempts: %w", p.Attempts, err)
}

// Edit runs a read–decide–write loop on one record under DefaultRetry.
// decide gets the current record (nil when the ref does not exist) and
// returns the change to write; its Ref and Old are filled in. Returning
// ErrNoChange ends the edit without writing. On a lost race the record is
// read again and decide runs again, so decide must not have side effects.
// Edit returns the record as it stands after the edit (nil once deleted).
func (s *Store) Edit(ctx context.Context, ref string, decide func(cur *Record) (Change, error)) (*Record, error) {
	var result *Record
	err := DefaultRetry.Retry(ctx, func(ctx context.Context) error {
		cur, err := s.Read(ctx, ref)
		if errors.Is(err, ErrNotFound) {
			cur, err = nil, nil
		}
		if err != nil {
			return err
		}
		ch, err := decide(cur)
		if errors.Is(err, ErrNoChange) {
			result = cur
			return nil
		}
		if err != nil {
			return err
		}
		ch.Ref, ch.Old = ref, cur
		written, err := s.Write(ctx, []Change{ch})
		if err != nil {
			return err
		}
		result = written[0]
		return nil
	})
	return result, err
}
