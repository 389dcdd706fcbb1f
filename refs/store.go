package refs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/par"
)

const (
	// Prefix is the namespace of all flume state.
	Prefix = "refs/flume/"
	// SnapshotPrefix holds snapshot commits of work trees (SPEC W3). They
	// are plain commits, not records, and are not read as records.
	SnapshotPrefix = "refs/flume/snapshots/"
	// StateFile is the name of the record in each state commit's tree.
	StateFile = "state.json"
)

// Validator checks a record of one kind beyond its header: ref is the
// record's ref under refs/flume/, data its state.json. A record it refuses
// is a *MalformedError: never acted on, never overwritten. What it decoded
// on the way is handed to the record's first reader (Record.Take), so a
// record is decoded once.
type Validator func(ref string, data []byte) (any, error)

// Kind is one record kind a store knows: its name, its newest schema (a
// record of a newer one is reported and never overwritten, R5) and,
// where it has one, the check of its records beyond their header.
type Kind struct {
	Name     string
	Schema   int
	Validate Validator
}

// Kinds are the record kinds of a store. Each package that owns a kind
// exports it; the program wires the list once (cmd), never by the side
// effects of an import.
type Kinds []Kind

// ErrNotFound means the ref holds no record.
var ErrNotFound = errors.New("no such record")

// ErrNoChange may be returned by an Edit's decide function to end the edit
// without writing.
var ErrNoChange = errors.New("no change")

// ConflictError is a lost compare-and-swap race: a ref was not at the commit
// the writer read. Nothing in the transaction was written.
type ConflictError = git.ConflictError

// MalformedError is a record that cannot be read: not a commit, no
// state.json, not JSON, no schema or kind, or a kind this build does not know.
type MalformedError struct {
	Ref    string
	Commit string
	Reason string
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("%s: %s", e.Ref, e.Reason)
}

// NewerSchemaError is a record written by a newer git-flume. It is never
// overwritten (R5).
type NewerSchemaError struct {
	Ref    string
	Kind   string
	Schema int
	Known  int
}

func (e *NewerSchemaError) Error() string {
	return fmt.Sprintf("%s: %s record has schema %d, newer than %d which this git-flume knows; upgrade git-flume", e.Ref, e.Kind, e.Schema, e.Known)
}

// Record is one entity's state as read at one commit.
type Record struct {
	Ref string
	// Commit is the state commit the record was read at: the old value of
	// the next compare-and-swap.
	Commit string
	Kind   string
	Schema int
	// Data is state.json exactly as stored.
	Data []byte
	// decoded is what the kind's validator decoded, until taken.
	decoded any
}

// Deletion is the change that deletes record r if it still stands as read
// (R2), said by msg.
func (r *Record) Deletion(msg string) Change {
	return Change{Ref: r.Ref, Old: r, Delete: true, Message: msg}
}

// Take returns what the kind's validator decoded from the record, once:
// the first caller owns it, later ones get nil and decode Data themselves.
func (r *Record) Take() any {
	v := r.decoded
	r.decoded = nil
	return v
}

// Decode unmarshals the record's JSON into v.
func (r *Record) Decode(v any) error {
	if err := json.Unmarshal(r.Data, v); err != nil {
		return fmt.Errorf("decode %s: %w", r.Ref, err)
	}
	return nil
}

// header is the part of every record the store itself reads.
type header struct {
	Schema *int   `json:"schema"`
	Kind   string `json:"kind"`
}

// Store reads and writes records in one repository.
type Store struct {
	repo *git.Repo
	// Now is the clock for commit dates.
	Now func() time.Time
	// Schemas maps each known record kind to its newest schema.
	Schemas map[string]int
	// Validators check records of a kind beyond the header.
	Validators map[string]Validator
	// Fault is a test seam: sync calls it at named points ("fetched").
	// nil in git-flume itself.
	Fault func(point string)
	// session, when set, carries every transaction (see InSession).
	session *git.RefSession
	// backend holds the records: repo, or memory (NewMemory).
	backend Backend
}

// InSession returns a copy of the store whose transactions go through
// sess, one git process for all of them, each with sess's reflog message.
// git.RefSession says which writes may: a later transaction of a session
// is only for refs no other process moves meanwhile.
func (s *Store) InSession(sess *git.RefSession) *Store {
	c := *s
	c.session = sess
	return &c
}

// New returns a store over repo's refs/flume namespace that knows kinds.
func New(repo *git.Repo, kinds Kinds) *Store {
	s := &Store{repo: repo, backend: repo, Now: time.Now, Schemas: map[string]int{}, Validators: map[string]Validator{}}
	for _, k := range kinds {
		s.Schemas[k.Name] = k.Schema
		if k.Validate != nil {
			s.Validators[k.Name] = k.Validate
		}
	}
	return s
}

// Repo returns the repository the store writes to.
func (s *Store) Repo() *git.Repo { return s.repo }

// parse checks a record read at commit and returns it, or a
// *MalformedError or *NewerSchemaError naming its ref.
func (s *Store) parse(ref, commit string, data []byte) (*Record, error) {
	var h header
	// Unmarshal reads data in place (a Decoder copied every record into
	// a buffer of its own: a tenth of what status allocated at 10,000
	// places; issue 46) and refuses anything after the first value.
	if err := json.Unmarshal(data, &h); err != nil {
		if json.NewDecoder(bytes.NewReader(data)).Decode(&header{}) == nil {
			return nil, &MalformedError{Ref: ref, Commit: commit, Reason: StateFile + " holds more than one JSON value"}
		}
		return nil, &MalformedError{Ref: ref, Commit: commit, Reason: fmt.Sprintf("%s is not a JSON object: %v", StateFile, err)}
	}
	if h.Schema == nil || h.Kind == "" {
		return nil, &MalformedError{Ref: ref, Commit: commit, Reason: StateFile + ` lacks "schema" or "kind"`}
	}
	known, ok := s.Schemas[h.Kind]
	if !ok {
		return nil, &MalformedError{Ref: ref, Commit: commit, Reason: fmt.Sprintf("unknown record kind %q", h.Kind)}
	}
	if *h.Schema > known {
		return nil, &NewerSchemaError{Ref: ref, Kind: h.Kind, Schema: *h.Schema, Known: known}
	}
	if *h.Schema < 1 {
		return nil, &MalformedError{Ref: ref, Commit: commit, Reason: fmt.Sprintf("schema %d is not a version", *h.Schema)}
	}
	var decoded any
	if v := s.Validators[h.Kind]; v != nil {
		var err error
		if decoded, err = v(ref, data); err != nil {
			return nil, &MalformedError{Ref: ref, Commit: commit, Reason: err.Error()}
		}
	}
	return &Record{Ref: ref, Commit: commit, Kind: h.Kind, Schema: *h.Schema, Data: data, decoded: decoded}, nil
}

// Check reads data as the state.json of a record at ref would be read,
// header, schema and the kind's validator, and says why it is not one.
func (s *Store) Check(ref string, data []byte) error {
	_, err := s.parse(ref, "", data)
	return err
}

// Read returns the record at ref and the commit it was read at. It returns
// ErrNotFound when the ref does not exist, and a *MalformedError or
// *NewerSchemaError when it cannot be used.
func (s *Store) Read(ctx context.Context, ref string) (*Record, error) {
	rf, err := s.backend.ReadRefFile(ctx, ref, StateFile)
	if errors.Is(err, git.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", ref, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return s.check(ref, rf)
}

// check turns what a ref holds into a record, or says why it is not one.
func (s *Store) check(ref string, rf git.RefFile) (*Record, error) {
	switch {
	case rf.Type != "commit":
		return nil, &MalformedError{Ref: ref, Commit: rf.ID, Reason: fmt.Sprintf("points at a %s, not a state commit", rf.Type)}
	case !rf.Found:
		return nil, &MalformedError{Ref: ref, Commit: rf.ID, Reason: "commit " + rf.ID + " has no " + StateFile}
	case !rf.IsFile:
		return nil, &MalformedError{Ref: ref, Commit: rf.ID, Reason: StateFile + " is not a file"}
	case len(rf.Data) > MaxRecordSize:
		// A record is a few KiB; a remote's far larger one is not read
		// into every command.
		return nil, &MalformedError{Ref: ref, Commit: rf.ID, Reason: fmt.Sprintf("%s is %d bytes, more than a record's %d", StateFile, len(rf.Data), MaxRecordSize)}
	}
	return s.parse(ref, rf.ID, rf.Data)
}

// MaxRecordSize bounds a record's state.json. A place with every stage
// run many times is tens of KiB.
const MaxRecordSize = 1 << 20

// Problem is a ref under refs/flume that List could not read as a record.
type Problem struct {
	Ref string
	Err error
}

func (p *Problem) Error() string { return p.Err.Error() }
func (p *Problem) Unwrap() error { return p.Err }

// List reads every record under the prefixes (a prefix may name one ref
// whole) in process where git's files allow, else in two git processes
// whatever their number (R4): one listing, one pipelined batch read. Refs
// that cannot be read are returned as problems, each naming its ref; the
// others still read (R5). Snapshot refs are not records and are skipped.
func (s *Store) List(ctx context.Context, prefixes ...string) ([]*Record, []*Problem, error) {
	var records []*Record
	problems, err := s.Each(ctx, func(_ int, rec *Record) error {
		records = append(records, rec)
		return nil
	}, prefixes...)
	if err != nil {
		return nil, nil, err
	}
	return records, problems, nil
}

// eachBatch is how many records Each decodes at a time.
const eachBatch = 256

// Each reads the records under the prefixes as List does and gives them
// to fn in ref order, as they are decoded, a batch at a time: a caller
// that keeps less of each than the record holds never holds every record
// decoded at once (status at 10,000 places: 23 MB). fn is told how many
// refs were listed, for what it keeps of them; its error ends the walk.
// The problems are List's.
func (s *Store) Each(ctx context.Context, fn func(listed int, rec *Record) error, prefixes ...string) ([]*Problem, error) {
	listed, err := s.backend.ListRefs(ctx, prefixes...)
	if err != nil {
		return nil, err
	}
	commits, problems := stateCommits(listed)
	if len(commits) == 0 {
		return problems, nil
	}
	ids := make([]string, len(commits))
	for i, ref := range commits {
		ids[i] = ref.ID
	}
	blobs, err := s.backend.FilesAt(ctx, ids, StateFile)
	if err != nil {
		return nil, err
	}
	// Decoding and validating is most of a large listing's own work;
	// records are independent of each other.
	checked := make([]*Record, min(eachBatch, len(commits)))
	errs := make([]error, len(checked))
	for at := 0; at < len(commits); at += len(checked) {
		batch := commits[at:min(at+len(checked), len(commits))]
		par.Each(len(batch), func(i int) bool {
			ref, b := batch[i], &blobs[at+i]
			rf := git.RefFile{ID: ref.ID, Type: ref.Type, Found: b.Type != "", IsFile: b.Type == "blob", Data: b.Data}
			checked[i], errs[i] = s.check(ref.Name, rf)
			*b = git.Object{} // its bytes are the record's now
			return true
		})
		for i, ref := range batch {
			if errs[i] != nil {
				problems = append(problems, &Problem{Ref: ref.Name, Err: errs[i]})
			} else if err := fn(len(listed), checked[i]); err != nil {
				return nil, err
			}
		}
	}
	slices.SortFunc(problems, func(a, b *Problem) int { return strings.Compare(a.Ref, b.Ref) })
	return problems, nil
}

// stateCommits sorts listed refs: those at a commit, whose state file is
// read next, and the problem of each other one, naming its ref (R5).
// Snapshot refs are not records and are skipped.
func stateCommits(listed []git.Ref) (commits []git.Ref, problems []*Problem) {
	for _, ref := range listed {
		if strings.HasPrefix(ref.Name, SnapshotPrefix) {
			continue
		}
		if ref.Type != "commit" {
			reason := fmt.Sprintf("points at a %s, not a state commit", ref.Type)
			switch ref.Type {
			case git.TypeMissing:
				reason = "points at an object the repository does not have (pruned, or copied by hand)"
			case git.TypeBroken:
				reason = "its file holds no object id"
			}
			problems = append(problems, &Problem{Ref: ref.Name, Err: &MalformedError{Ref: ref.Name, Commit: ref.ID, Reason: reason}})
			continue
		}
		commits = append(commits, ref)
	}
	return commits, problems
}

// Change is one record's move in a transaction.
type Change struct {
	Ref string
	// Old is the record as the writer read it; nil creates the ref, which
	// must not exist yet.
	Old *Record
	// State is the new record, marshalled to JSON. It must carry the
	// "schema" and "kind" of a known kind. Ignored when Delete is set.
	State any
	// Delete removes the ref (Old must be set).
	Delete bool
	// Message says what moved; it becomes the state commit's message.
	Message string
	// Hold lists commits the new state commit also names as parents, so
	// that git keeps them reachable from the record (X2): a tidied place
	// holds its deleted branch's last commit this way.
	Hold []string
}

// Write applies changes as one transaction (R2): every ref moves or none
// does. A ref that moved since its Old was read fails the whole write with a
// *ConflictError. Extra ref updates (for example a snapshot ref) join the
// same transaction. It returns the records as written, in the order of
// changes (nil for a deletion), so a caller can chain its next move.
func (s *Store) Write(ctx context.Context, changes []Change, extra ...git.RefUpdate) ([]*Record, error) {
	return s.WriteLogged(ctx, "", changes, extra...)
}

// WriteLogged is Write with a reflog message for the refs among extra that
// keep a reflog (a branch a promotion moves). The records come first in
// the transaction: git renames its locks in the order given, so a crash
// inside the commit can leave the records written and the extra refs not,
// never the reverse.
func (s *Store) WriteLogged(ctx context.Context, reflog string, changes []Change, extra ...git.RefUpdate) ([]*Record, error) {
	prepared := make([]*Prepared, len(changes))
	for i, ch := range changes {
		p, err := s.Prepare(ctx, ch)
		if err != nil {
			return nil, err
		}
		prepared[i] = p
	}
	return s.Commit(ctx, reflog, prepared, extra...)
}

// Prepared is a change whose objects are written and whose ref has not
// moved yet. A change prepared and never committed leaves only unreachable
// objects, which git's gc removes.
type Prepared struct {
	update git.RefUpdate
	rec    *Record
}

// Prepare writes a change's objects without moving its ref, so that a
// caller can build them ahead of the moment the ref must move (and in
// parallel across repositories).
func (s *Store) Prepare(ctx context.Context, ch Change) (*Prepared, error) {
	u, rec, err := s.prepare(ctx, ch)
	if err != nil {
		return nil, err
	}
	return &Prepared{update: u, rec: rec}, nil
}

// Commit moves the refs of prepared changes, then the extra refs, in one
// transaction, as WriteLogged does; each change still moves only from the
// Old it was prepared on.
func (s *Store) Commit(ctx context.Context, reflog string, prepared []*Prepared, extra ...git.RefUpdate) ([]*Record, error) {
	updates := make([]git.RefUpdate, 0, len(prepared)+len(extra))
	written := make([]*Record, len(prepared))
	for i, p := range prepared {
		updates = append(updates, p.update)
		written[i] = p.rec
	}
	updates = append(updates, extra...)
	if err := s.update(ctx, reflog, updates); err != nil {
		var conflict *ConflictError
		if errors.As(err, &conflict) {
			return nil, err
		}
		return nil, fmt.Errorf("write %s: %w", refNames(updates), err)
	}
	return written, nil
}

// Lock waits: git holds a ref's lock only while it updates it, so a held
// lock clears within milliseconds, and a write waits up to lockWait for a
// lock that looks live. A lock file is left behind only when a git process
// was killed with SIGKILL (git removes its locks on SIGINT and SIGTERM): a
// lock already older than leftLock is reported at once, naming its file,
// and flume never removes it: removing another process's live
// lock lets two writers both "win" (a test of 8 writers under load lost an
// update that way), and flume makes no lock files of its own to remove.
const (
	lockWait = 5 * time.Second
	leftLock = 10 * time.Second
)

// update runs one transaction, waiting out a held lock that looks live.
func (s *Store) update(ctx context.Context, reflog string, updates []git.RefUpdate) error {
	deadline := time.Now().Add(lockWait)
	wait := 5 * time.Millisecond
	for {
		var err error
		if s.session != nil {
			err = s.session.Update(ctx, updates)
		} else {
			err = s.backend.UpdateRefsLogged(ctx, reflog, updates)
		}
		var locked *git.LockedError
		if !errors.As(err, &locked) {
			return err
		}
		if time.Now().After(deadline) || locked.Oldest >= leftLock {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 250*time.Millisecond)
	}
}

func refNames(us []git.RefUpdate) string {
	names := make([]string, len(us))
	for i, u := range us {
		names[i] = u.Name
	}
	return strings.Join(names, ", ")
}

// prepare builds the state commit of one change and returns its ref update
// and the record it will be once the update lands.
func (s *Store) prepare(ctx context.Context, ch Change) (git.RefUpdate, *Record, error) {
	if !strings.HasPrefix(ch.Ref, Prefix) || strings.HasPrefix(ch.Ref, SnapshotPrefix) {
		return git.RefUpdate{}, nil, fmt.Errorf("write %s: not a record ref under %s", ch.Ref, Prefix)
	}
	if ch.Old != nil && ch.Old.Ref != ch.Ref {
		return git.RefUpdate{}, nil, fmt.Errorf("write %s: old record was read from %s", ch.Ref, ch.Old.Ref)
	}
	if ch.Delete {
		if ch.Old == nil {
			return git.RefUpdate{}, nil, fmt.Errorf("delete %s: the record to delete was not read", ch.Ref)
		}
		return git.RefUpdate{Op: git.Delete, Name: ch.Ref, Old: ch.Old.Commit}, nil, nil
	}
	data, err := json.Marshal(ch.State)
	if err != nil {
		return git.RefUpdate{}, nil, fmt.Errorf("write %s: %w", ch.Ref, err)
	}
	// Check what we are about to store the way a reader will.
	rec, err := s.parse(ch.Ref, "", data)
	if err != nil {
		return git.RefUpdate{}, nil, fmt.Errorf("write %s: refusing to store an unreadable record: %w", ch.Ref, err)
	}
	msg := ch.Message
	if msg == "" {
		msg = "update " + strings.TrimPrefix(ch.Ref, Prefix)
	}
	spec := git.CommitSpec{Message: msg, When: s.Now()}
	if ch.Old != nil {
		spec.Parents = []string{ch.Old.Commit}
	}
	spec.Parents = append(spec.Parents, ch.Hold...)
	commit, err := s.backend.WriteState(ctx, StateFile, data, spec)
	if err != nil {
		return git.RefUpdate{}, nil, fmt.Errorf("write %s: %w", ch.Ref, err)
	}
	rec.Commit = commit
	if ch.Old == nil {
		return git.RefUpdate{Op: git.Create, Name: ch.Ref, New: commit}, rec, nil
	}
	return git.RefUpdate{Op: git.Update, Name: ch.Ref, New: commit, Old: ch.Old.Commit}, rec, nil
}
