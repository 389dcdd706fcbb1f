package refs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/proc"
)

// ClaimPrefix holds one claim per claimed place (R8).
const ClaimPrefix = "refs/flume/claims/"

// ClaimRef is the ref of the claim on a place.
func ClaimRef(place string) string { return ClaimPrefix + place }

// Session identifies the caller of a gate: its key (`sid:<id>` or
// `cwd:<dir>`), the pid of the session process and its host.
type Session struct {
	Key  string
	PID  int
	Host string
	// Agent is the session of the flume-started agent whose process tree
	// the caller runs in, "" for a person's: an agent acts only as its own
	// session and never takes over another's claim (R8).
	Agent string
}

// AgentKey is the claim key of a flume-started agent's session.
func AgentKey(session string) string { return "sid:" + session }

// Claim is a session's binding to a place (R8).
type Claim struct {
	Schema int       `json:"schema"`
	Kind   string    `json:"kind"` // "claim"
	Place  string    `json:"place"`
	Key    string    `json:"key"`
	PID    int       `json:"pid"`
	Host   string    `json:"host"`
	Since  time.Time `json:"since"`
}

// ClaimKind is the claim record (R8), refs' own kind.
var ClaimKind = Kind{Name: "claim", Schema: 1, Validate: validateClaimRecord}

// validateClaimRecord checks a claim record (R5, R8): its key and host
// read like a session's and a host's, its pid is a pid. A claim may come
// from a remote, and its key and host are printed.
func validateClaimRecord(ref string, data []byte) (any, error) {
	var c Claim
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	if err := ValidateKey(c.Key); err != nil {
		return nil, fmt.Errorf("invalid claim record: %w", err)
	}
	if err := ValidateHost(c.Host); err != nil {
		return nil, fmt.Errorf("invalid claim record: %w", err)
	}
	if c.PID < 0 {
		return nil, fmt.Errorf("invalid claim record: pid %d", c.PID)
	}
	return &c, nil
}

// Alive reports whether the claim's session may still be running: on this
// host its pid must exist or, for a session id, some process must still
// carry it as its FLUME_SESSION (a claim dies with its session, not with
// the one process of it that made the claim); on another host flume
// cannot tell, so the claim stands.
func (c *Claim) Alive(host string) bool {
	if ProcessAlive(c.Host, c.PID, host) {
		return true
	}
	sid, ok := strings.CutPrefix(c.Key, "sid:")
	return ok && len(proc.WithEnv("FLUME_SESSION="+sid)) > 0
}

// ProcessAlive reports whether process pid on procHost may still run, as
// seen from host: on the same host the pid must run (a zombie has ended); another host's
// process cannot be checked, so it counts as alive.
func ProcessAlive(procHost string, pid int, host string) bool {
	if procHost != host {
		return true
	}
	return proc.Alive(pid)
}

// ClaimedError is a gate refused because another live session claims the
// place. --take-over passes it.
type ClaimedError struct {
	Place string
	Claim Claim
	// Remote is set for a shared claim the remote refused: another host
	// holds it there (R8).
	Remote string
	// Agent is set when the caller is a flume-started agent, which never
	// takes over another session's claim (R8).
	Agent bool
}

func (e *ClaimedError) Error() string {
	if e.Agent {
		return fmt.Sprintf("place %s is claimed by %s (pid %d on %s); an agent never takes over another session's claim: a claim is not unlocked by whoever it locks out (a person runs --take-over from their own shell)",
			e.Place, e.Claim.Key, e.Claim.PID, e.Claim.Host)
	}
	if e.Remote != "" {
		return fmt.Sprintf("place %s is claimed on %s by another host (the create-only push of this claim was refused); the local claim was rolled back", e.Place, e.Remote)
	}
	return fmt.Sprintf("place %s is claimed by %s (pid %d on %s since %s); pass --take-over to act anyway",
		e.Place, e.Claim.Key, e.Claim.PID, e.Claim.Host, e.Claim.Since.UTC().Format(time.RFC3339))
}

// ClaimState is a place's claim as a gate read it.
type ClaimState struct {
	Record *Record // nil when unclaimed
	Claim  Claim
}

// Verify is the ref update that makes a later write conditional on the claim
// still being as the gate judged it, so that gate and write are one atomic
// step.
func (cs ClaimState) Verify(place string) git.RefUpdate {
	u := git.RefUpdate{Op: git.Verify, Name: ClaimRef(place)}
	if cs.Record != nil {
		u.Old = cs.Record.Commit
	}
	return u
}

// ReadClaim reads the claim on a place. A claim whose session is gone (same
// host, pid dead) is released here, by its first reader (R8).
func (s *Store) ReadClaim(ctx context.Context, place, host string) (ClaimState, error) {
	rec, err := s.Read(ctx, ClaimRef(place))
	if errors.Is(err, ErrNotFound) {
		return ClaimState{}, nil
	}
	if err != nil {
		return ClaimState{}, err
	}
	return s.liveClaim(ctx, rec, host)
}

// ReadClaimRecord is ReadClaim for a claim record already read (by List).
func (s *Store) ReadClaimRecord(ctx context.Context, rec *Record, host string) (ClaimState, error) {
	return s.liveClaim(ctx, rec, host)
}

// liveClaim decodes a claim record and releases it when its session is dead.
func (s *Store) liveClaim(ctx context.Context, rec *Record, host string) (ClaimState, error) {
	var c Claim
	if err := rec.Decode(&c); err != nil {
		return ClaimState{}, err
	}
	if c.Alive(host) {
		return ClaimState{Record: rec, Claim: c}, nil
	}
	_, err := s.Write(ctx, []Change{rec.Deletion("")})
	var conflict *ConflictError
	if errors.As(err, &conflict) {
		// Someone moved it meanwhile: read what is there now.
		return s.ReadClaim(ctx, c.Place, host)
	}
	if err != nil {
		return ClaimState{}, fmt.Errorf("release dead claim on %s: %w", c.Place, err)
	}
	return ClaimState{}, nil
}

// Gate refuses an action on a place claimed by another live session unless
// takeOver is set (R8). An agent's own claim is the one keyed by its own
// session, and an agent never takes over another's.
func (cs ClaimState) Gate(place string, sess Session, takeOver bool) error {
	if cs.Record == nil {
		return nil
	}
	if sess.Agent != "" {
		if cs.Claim.Key == AgentKey(sess.Agent) {
			return nil
		}
		return &ClaimedError{Place: place, Claim: cs.Claim, Agent: true}
	}
	if cs.Claim.Key == sess.Key || takeOver {
		return nil
	}
	return &ClaimedError{Place: place, Claim: cs.Claim}
}

// Use claims a place for a session. A place claimed by another live session
// is refused unless takeOver; the session's own claim is renewed.
func (s *Store) Use(ctx context.Context, place string, sess Session, takeOver bool) (Claim, error) {
	claim := Claim{Schema: 1, Kind: "claim", Place: place, Key: sess.Key, PID: sess.PID, Host: sess.Host, Since: s.Now().UTC()}
	err := DefaultRetry.Retry(ctx, func(ctx context.Context) error {
		cs, err := s.ReadClaim(ctx, place, sess.Host)
		if err != nil {
			return err
		}
		if err := cs.Gate(place, sess, takeOver); err != nil {
			return err
		}
		msg := fmt.Sprintf("claim %s for %s", place, sess.Key)
		if cs.Record != nil && cs.Claim.Key != sess.Key {
			msg = fmt.Sprintf("take over %s from %s for %s", place, cs.Claim.Key, sess.Key)
		}
		_, err = s.Write(ctx, []Change{{Ref: ClaimRef(place), Old: cs.Record, State: claim, Message: msg}})
		return err
	})
	return claim, err
}

// Release drops a session's claim on a place. Releasing another live
// session's claim needs takeOver. Releasing an unclaimed place is not an
// error.
func (s *Store) Release(ctx context.Context, place string, sess Session, takeOver bool) (released bool, err error) {
	err = DefaultRetry.Retry(ctx, func(ctx context.Context) error {
		cs, err := s.ReadClaim(ctx, place, sess.Host)
		if err != nil || cs.Record == nil {
			released = false
			return err
		}
		if err := cs.Gate(place, sess, takeOver); err != nil {
			return err
		}
		_, err = s.Write(ctx, []Change{cs.Record.Deletion("release " + place)})
		released = err == nil
		return err
	})
	return released, err
}
