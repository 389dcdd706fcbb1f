package land

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// Prefix is where the lander's entries live, one per place.
const Prefix = refs.Prefix + "land/"

// An entry's states (Q1).
const (
	Queued   = "queued"   // submitted: waits for its proof on the target's tip
	Proven   = "proven"   // green on the target's tip, waiting for a person's approval (Q7)
	Returned = "returned" // a red check or a conflict sent it back to its place
	Landing  = "landing"  // proven, its leased push to the shared remote under way (Q8)
	Landed   = "landed"   // the target moved to its proven candidate
)

// Entry is a place's submission to the lander (Q1) and what became of it.
type Entry struct {
	Schema int    `json:"schema"`
	Kind   string `json:"kind"` // always "land"
	Place  string `json:"place"`
	Branch string `json:"branch"`
	Target string `json:"target"`
	// Tip is the branch's commit as submitted: what lands, whatever the
	// branch does after.
	Tip       string    `json:"tip"`
	Host      string    `json:"host"`
	Submitted time.Time `json:"submitted"`
	State     string    `json:"state"`
	// Reason says why it was returned.
	Reason string `json:"reason,omitempty"`
	// Conflicts are the files its merge onto the target's tip conflicts in.
	Conflicts []string `json:"conflicts,omitempty"`
	// Voided counts proofs a target that moved made void (Q3).
	Voided int    `json:"voided,omitempty"`
	Proof  *Proof `json:"proof,omitempty"`
	// Approval is a person's approval of Tip (Q7): void once the place is
	// submitted at another tip.
	Approval *Approval `json:"approval,omitempty"`
}

// Approval is who approved an entry's tip, and when.
type Approval struct {
	Tip string    `json:"tip"`
	By  string    `json:"by"`
	At  time.Time `json:"at"`
}

// Approved reports whether a person approved the entry as it stands.
func (e *Entry) Approved() bool { return e.Approval != nil && e.Approval.Tip == e.Tip }

// Proof is what a candidate was checked as (Q2): made on the target's tip
// Base, the checks the repository declared at Base, each with its argv,
// exit status, duration and output's end, and a digest of what they ran
// with.
type Proof struct {
	Base      string `json:"base"`
	Candidate string `json:"candidate"`
	Tree      string `json:"tree"`
	// Places are the entries whose merges the candidate carries onto
	// Base, in the order they were merged: more than one for a batch (Q5).
	Places []string `json:"places,omitempty"`
	Checks []Check  `json:"checks"`
	// Boundary is what the checks ran behind (Q13): the sandbox's layers,
	// or "off: " and why they ran without one.
	Boundary string    `json:"boundary,omitempty"`
	Passed   bool      `json:"passed"`
	Digest   string    `json:"digest"`
	At       time.Time `json:"at"`
}

// Check is one check of a proof.
type Check struct {
	Argv       []string `json:"argv"`
	Exit       int      `json:"exit"`
	DurationMs int64    `json:"durationMs"`
	Tail       string   `json:"tail"`
	// TimedOut: it ran past [land] timeout and was ended (Exit -1).
	TimedOut bool `json:"timedOut,omitempty"`
}

// Bounds on what an entry may hold (R5).
const (
	maxChecks = 32
	maxTail   = 4 << 10
	maxFiles  = 256
	maxBatch  = stage.MaxLandBatch
)

// EntryKind is the lander's record kind.
var EntryKind = refs.Kind{Name: "land", Schema: 1, Validate: validateEntry}

// validateEntry checks an entry as it would have been written for the
// place its ref names: a record is input (R5).
func validateEntry(ref string, data []byte) (any, error) {
	var e Entry
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("not a land entry: %v", err)
	}
	if err := checkEntry(strings.TrimPrefix(ref, Prefix), &e); err != nil {
		return nil, fmt.Errorf("invalid land entry: %v", err)
	}
	return &e, nil
}

func checkEntry(id string, e *Entry) error {
	if e.Kind != "land" || e.Schema != 1 {
		return fmt.Errorf("kind %q schema %d, want land 1", e.Kind, e.Schema)
	}
	if pid, err := record.PlaceID(e.Place); err != nil || pid != e.Place || e.Place != id {
		return fmt.Errorf("place %q under ref name %q", e.Place, id)
	}
	if kind, name, _ := strings.Cut(e.Place, "--"); e.Branch != kind+"/"+name {
		return fmt.Errorf("branch %q, want %s/%s", e.Branch, kind, name)
	}
	if err := git.CheckRefName("refs/heads/" + e.Target); err != nil || e.Target == "" {
		return fmt.Errorf("target %q is not a branch name", e.Target)
	}
	if !git.IsObjectID(e.Tip) {
		return fmt.Errorf("tip %q is not a full object id", e.Tip)
	}
	if err := refs.ValidateHost(e.Host); err != nil {
		return err
	}
	switch e.State {
	case Queued, Proven, Landing, Returned, Landed:
	default:
		return fmt.Errorf("state %q", e.State)
	}
	if len(e.Conflicts) > maxFiles || e.Voided < 0 || len(e.Reason) > maxTail {
		return fmt.Errorf("%d conflicts, %d voided, a reason of %d bytes", len(e.Conflicts), e.Voided, len(e.Reason))
	}
	if err := checkProof(e.Proof); err != nil {
		return err
	}
	if e.State == Landed && (e.Proof == nil || !e.Proof.Passed || len(e.Proof.Places) > 0 && !slices.Contains(e.Proof.Places, e.Place)) {
		return fmt.Errorf("landed without a passed proof of its merge")
	}
	if (e.State == Proven || e.State == Landing) && (e.Proof == nil || !e.Proof.Passed) {
		return fmt.Errorf("%s without a passed proof", e.State)
	}
	if a := e.Approval; a != nil && (!git.IsObjectID(a.Tip) || a.By == "" || len(a.By) > 256) {
		return fmt.Errorf("an approval of %q by %d bytes", a.Tip, len(a.By))
	}
	if strings.ContainsFunc(e.Target+e.Branch+e.approver(), unicode.IsControl) {
		return fmt.Errorf("a name holds a control character")
	}
	return nil
}

// checkProof checks a proof's ids and bounds (R5); nil is none.
func checkProof(p *Proof) error {
	if p == nil {
		return nil
	}
	for _, id := range []string{p.Base, p.Candidate, p.Tree} {
		if !git.IsObjectID(id) {
			return fmt.Errorf("proof names %q, not a full object id", id)
		}
	}
	if len(p.Places) > maxBatch {
		return fmt.Errorf("a proof of %d places, want at most %d", len(p.Places), maxBatch)
	}
	for _, place := range p.Places {
		if pid, err := record.PlaceID(place); err != nil || pid != place {
			return fmt.Errorf("proof names place %q", place)
		}
	}
	if len(p.Boundary) > maxTail {
		return fmt.Errorf("a boundary of %d bytes", len(p.Boundary))
	}
	if len(p.Checks) > maxChecks {
		return fmt.Errorf("%d checks, want at most %d", len(p.Checks), maxChecks)
	}
	for _, c := range p.Checks {
		if len(c.Tail) > maxTail || len(c.Argv) == 0 || c.DurationMs < 0 {
			return fmt.Errorf("a check of %d words, %d ms, a tail of %d bytes", len(c.Argv), c.DurationMs, len(c.Tail))
		}
	}
	return nil
}

// Ref is the ref of place id's entry.
func Ref(id string) string { return Prefix + id }

// read reads place id's entry; nil when there is none.
func read(ctx context.Context, store *refs.Store, id string) (*refs.Record, *Entry, error) {
	rec, err := store.Read(ctx, Ref(id))
	if errors.Is(err, refs.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if e, ok := rec.Take().(*Entry); ok {
		return rec, e, nil
	}
	var e Entry
	if err := rec.Decode(&e); err != nil {
		return nil, nil, err
	}
	return rec, &e, nil
}

func (e *Entry) approver() string {
	if e.Approval == nil {
		return ""
	}
	return e.Approval.By
}
