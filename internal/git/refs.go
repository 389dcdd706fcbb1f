package git

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/git/ondisk"
)

// Ref is a ref name, the object id it points at and that object's type.
type Ref = ondisk.Ref

// Types of a listed ref whose object cannot be read.
const (
	// TypeMissing: the ref names an object the repository does not have
	// (a `git gc --prune=now` beside a writer, a copy made by hand).
	TypeMissing = "missing"
	// TypeBroken: the ref's file holds no object id; its ID is "".
	TypeBroken = ondisk.TypeBroken
)

// ListRefs returns every ref under the prefixes (such as "refs/flume/"; a
// full ref name matches that ref), sorted by name: read in process where
// that is safe (the repository's storer), else with git. A ref whose object
// is missing is listed with Type TypeMissing, and a loose ref holding no
// object id with TypeBroken, so that one such ref is named by its reader
// and never stops the reading of the others (R5).
func (repo *Repo) ListRefs(ctx context.Context, prefixes ...string) ([]Ref, error) {
	if refs, ok := repo.reads().IterReferences(prefixes); ok {
		return refs, nil
	}
	prefix := strings.Join(prefixes, " ")
	// The object's type is asked separately: for-each-ref dies on the
	// first ref whose object is missing, cat-file says "missing" of it.
	args := append([]string{"for-each-ref", "--format=%(objectname) %(refname)", "--end-of-options"}, prefixes...)
	out, err := repo.read(ctx, nil, args...)
	if err != nil {
		return nil, fmt.Errorf("list refs under %q: %w", prefix, err)
	}
	var refs []Ref
	var ids bytes.Buffer
	for line := range strings.SplitSeq(strings.TrimRight(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		id, name, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("list refs under %q: unexpected line %q", prefix, line)
		}
		refs = append(refs, Ref{ID: id, Name: name})
		ids.WriteString(id + "\n")
	}
	if len(refs) > 0 {
		out, err := repo.read(ctx, ids.Bytes(), "cat-file", "--batch-check=%(objectname) %(objecttype)")
		if err != nil {
			return nil, fmt.Errorf("list refs under %q: %w", prefix, err)
		}
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		if len(lines) != len(refs) {
			return nil, fmt.Errorf("list refs under %q: %d types for %d refs", prefix, len(lines), len(refs))
		}
		for i, l := range lines {
			_, typ, _ := strings.Cut(l, " ")
			refs[i].Type = typ
		}
	}
	// git skips a loose ref holding no object id, with a warning only.
	broken, err := repo.brokenLooseRefs(prefixes)
	if err != nil {
		return nil, fmt.Errorf("list refs under %q: %w", prefix, err)
	}
	refs = append(refs, broken...)
	slices.SortFunc(refs, func(a, b Ref) int { return strings.Compare(a.Name, b.Name) })
	return refs, nil
}

// brokenLooseRefs are the loose refs under the prefixes whose file holds
// neither an object id nor a symbolic ref.
func (repo *Repo) brokenLooseRefs(prefixes []string) ([]Ref, error) {
	var broken []Ref
	for _, p := range prefixes {
		root := filepath.Join(repo.CommonDir, filepath.FromSlash(strings.TrimSuffix(p, "/")))
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if !d.Type().IsRegular() || strings.HasSuffix(path, ".lock") {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return nil // gone since it was listed
			}
			id := strings.TrimSpace(string(data))
			if strings.HasPrefix(id, "ref:") || isHexID(id) {
				return nil
			}
			rel, err := filepath.Rel(repo.CommonDir, path)
			if err != nil {
				return err
			}
			broken = append(broken, Ref{Name: filepath.ToSlash(rel), Type: TypeBroken})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return broken, nil
}

// isHexID reports a full SHA-1 or SHA-256 id in hex.
func isHexID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// ResolveRef returns the object id ref points at, or an error wrapping
// ErrNotExist.
func (repo *Repo) ResolveRef(ctx context.Context, ref string) (string, error) {
	// A plain ref is read from git's files in process: a watcher reads
	// its place's branch every step and must spawn nothing for it while
	// nothing changes. A ref git must judge goes to git.
	if strings.HasPrefix(ref, "refs/") && CheckRefName(ref) == nil {
		if id, ok := repo.refValue(ref); ok {
			if id == "" {
				return "", fmt.Errorf("resolve %q: %w", ref, ErrNotExist)
			}
			return id, nil
		}
	}
	out, err := repo.read(ctx, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", ref)
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("resolve %q: %w", ref, ErrNotExist)
		}
		return "", fmt.Errorf("resolve %q: %w", ref, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// RefOp is what a RefUpdate does.
type RefOp int

const (
	// Create makes a ref that must not exist yet.
	Create RefOp = iota
	// Update moves a ref from Old to New.
	Update
	// Delete removes a ref that must be at Old.
	Delete
	// Verify checks that a ref is at Old (or absent when Old is empty)
	// without changing it.
	Verify
)

// RefUpdate is one compare-and-swap in a transaction.
type RefUpdate struct {
	Op   RefOp
	Name string
	New  string // for Create and Update
	Old  string // for Update, Delete and Verify; empty means "must not exist"
}

// RefConflict is one ref a transaction expected at one value and found at
// another.
type RefConflict struct {
	Name     string
	Expected string // "" means absent
	Found    string // "" means absent
}

// ConflictError reports a transaction that changed nothing because at least
// one ref was not where the caller read it: a lost compare-and-swap race.
type ConflictError struct {
	Conflicts []RefConflict
}

func (e *ConflictError) Error() string {
	parts := make([]string, len(e.Conflicts))
	for i, c := range e.Conflicts {
		parts[i] = fmt.Sprintf("%s: expected %s, found %s", c.Name, orAbsent(c.Expected), orAbsent(c.Found))
	}
	return "ref moved meanwhile: " + strings.Join(parts, "; ")
}

func orAbsent(id string) string {
	if id == "" {
		return "absent"
	}
	return id
}

// ErrLocked means a transaction could not take git's lock on a ref although
// every ref was where the caller expected: another git process held it.
var ErrLocked = errors.New("ref locked by another git process")

// UpdateRefs applies updates as one transaction through
// `git update-ref -z --stdin` (SPEC R2): either every ref moves or none does.
//
// When git refuses, the refs are read again to tell why, rather than reading
// git's stderr: a ref that is not where the caller expected makes a
// *ConflictError; refs that are all where expected mean a lock was held
// (ErrLocked, with git's words attached).
func (repo *Repo) UpdateRefs(ctx context.Context, updates []RefUpdate) error {
	return repo.UpdateRefsLogged(ctx, "", updates)
}

// UpdateRefsLogged is UpdateRefs with a reflog message for the refs that
// keep a reflog (branches).
func (repo *Repo) UpdateRefsLogged(ctx context.Context, message string, updates []RefUpdate) error {
	if len(updates) == 0 {
		return nil
	}
	in, err := repo.encodeUpdates(updates)
	if err != nil {
		return err
	}
	// LC_ALL=C: git's words about a held lock are read below, so they
	// must be the same whatever the user's locale.
	_, err = repo.write(ctx, in, []string{"LC_ALL=C"}, updateRefArgs(message, !flumeOnly(updates))...)
	return repo.refused(ctx, updates, err)
}

// encodeUpdates writes updates in update-ref's -z stdin format.
func (repo *Repo) encodeUpdates(updates []RefUpdate) ([]byte, error) {
	var in bytes.Buffer
	zero := repo.ZeroID()
	for _, u := range updates {
		if err := CheckRefName(u.Name); err != nil {
			return nil, err
		}
		switch u.Op {
		case Create:
			fmt.Fprintf(&in, "create %s\x00%s\x00", u.Name, u.New)
		case Update:
			fmt.Fprintf(&in, "update %s\x00%s\x00%s\x00", u.Name, u.New, cmp.Or(u.Old, zero))
		case Delete:
			if u.Old == "" {
				return nil, fmt.Errorf("delete %s: no expected value given", u.Name)
			}
			fmt.Fprintf(&in, "delete %s\x00%s\x00", u.Name, u.Old)
		case Verify:
			fmt.Fprintf(&in, "verify %s\x00%s\x00", u.Name, cmp.Or(u.Old, zero))
		default:
			return nil, fmt.Errorf("update %s: unknown op %d", u.Name, u.Op)
		}
	}
	return in.Bytes(), nil
}

// updateRefArgs is the update-ref command every transaction runs.
//
// core.warnAmbiguousRefs=false: with it on, git looks every full object
// id up as a ref name while parsing the commands, which loads a snapshot
// of packed-refs before the ref's lock is taken. git 2.39 revalidates that
// snapshot under the lock by stat alone (second-grained mtime, size,
// inode), and a `git pack-refs` that rewrote packed-refs meanwhile (same
// size, reused inode) goes unnoticed: the old value is then checked
// against a stale packed entry and a concurrent update is lost (R3; found
// by TestConcurrentIncrements_R3). With no lookup before the lock,
// packed-refs is first read under it.
//
// hooks false runs the transaction with hooks off (core.hooksPath at
// /dev/null): a transaction of flume's own records alone starts no
// reference-transaction hook, flume's nor anyone's, which would cost a
// shell per phase and tell nothing outside flume. One that moves a branch
// keeps them: a branch moved is news (a landing, T1), unless its caller
// knows no hook would act on it (BranchesUnheard).
//
// --no-deref: every ref flume moves is a branch or a record, never HEAD;
// a branch an agent made a symbolic ref ("ref: refs/heads/main") is
// moved itself, never the branch it names (A13).
func updateRefArgs(message string, hooks bool) []string {
	args := []string{"-c", "core.warnAmbiguousRefs=false"}
	if !hooks {
		args = append(args, "-c", "core.hooksPath=/dev/null")
	}
	args = append(args, "update-ref")
	if message != "" {
		args = append(args, "-m", message)
	}
	return append(args, "--no-deref", "-z", "--stdin")
}

// FlumePrefix is the namespace of flume's own refs.
const FlumePrefix = "refs/flume/"

// flumeOnly reports updates that touch only flume's own refs: its records,
// and beside them refs/flume-tracked/ and the like (what sync knows of a
// remote).
func flumeOnly(updates []RefUpdate) bool {
	for _, u := range updates {
		if !strings.HasPrefix(u.Name, "refs/flume/") && !strings.HasPrefix(u.Name, "refs/flume-") {
			return false
		}
	}
	return true
}

// refused tells why git refused a transaction (err from update-ref; nil
// when it did not): the refs are read again rather than git's stderr.
func (repo *Repo) refused(ctx context.Context, updates []RefUpdate, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	conflicts, rerr := repo.conflicts(ctx, updates)
	if rerr != nil {
		return fmt.Errorf("%w (re-reading refs: %v)", err, rerr)
	}
	if len(conflicts) > 0 {
		return &ConflictError{Conflicts: conflicts}
	}
	if held, files := repo.heldLocks(updates, err); held {
		le := &LockedError{Refs: names(updates), Files: files, Err: err}
		for _, f := range files {
			le.Oldest = max(le.Oldest, f.Age)
		}
		return le
	}
	// Every ref is where the caller expected and no lock is held: git
	// refused for another reason (a missing object, permissions, a full
	// disk), which its own words name. Never reported as a lock: a caller
	// would wait on it for nothing.
	return &UpdateError{Refs: names(updates), Err: err}
}

// UpdateError is a transaction git refused with every ref where the caller
// expected and no lock held: its words say why.
type UpdateError struct {
	Refs []string
	Err  error
}

func (e *UpdateError) Error() string {
	return fmt.Sprintf("update %s: %v", strings.Join(e.Refs, ", "), e.Err)
}

func (e *UpdateError) Unwrap() error { return e.Err }

// heldLocks are the lock files a refused transaction met, another
// process's, that are there now: a lock of one of its refs, or of
// packed-refs, which a deletion locks. held also reports git saying it
// found one ("Unable to create '….lock': File exists", in the C locale it
// runs in), since the lock may be gone by the time its file is looked for.
func (repo *Repo) heldLocks(updates []RefUpdate, err error) (held bool, files []LockFile) {
	var gerr *Error
	held = errors.As(err, &gerr) && strings.Contains(gerr.Stderr, ".lock': File exists")
	paths := []string{filepath.Join(repo.CommonDir, "packed-refs.lock")}
	for _, u := range updates {
		paths = append(paths, filepath.Join(repo.CommonDir, filepath.FromSlash(u.Name)+".lock"))
	}
	for _, p := range paths {
		if info, err := os.Lstat(p); err == nil {
			held = true
			files = append(files, LockFile{Path: p, Age: time.Since(info.ModTime())})
		}
	}
	return held, files
}

// LockFile is a ref lock file another process left or holds.
type LockFile struct {
	Path string
	Age  time.Duration
}

// CheckRefName applies git's rules for ref names (git check-ref-format) in
// process, so that a bad name is refused at once with its reason instead of
// by a failed update-ref.
func CheckRefName(name string) error { return ondisk.CheckRefName(name) }

// LockedError is a transaction refused because git's lock on a ref was
// held, every ref being where the caller expected. It matches ErrLocked,
// and names the lock files it met and how old they are.
type LockedError struct {
	Refs  []string
	Files []LockFile
	// Oldest is the age of the oldest lock file met: a live git holds one
	// for milliseconds, so an old one was left by a killed process.
	Oldest time.Duration
	Err    error
}

func (e *LockedError) Error() string {
	if len(e.Files) == 0 {
		return fmt.Sprintf("%s: %s: %v (a git process held its lock; try again)", ErrLocked, strings.Join(e.Refs, ", "), e.Err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", ErrLocked)
	for i, f := range e.Files {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s exists (made %s ago)", f.Path, f.Age.Round(time.Second))
	}
	b.WriteString("; a git process holds it, or one that was killed left it: if no git runs in this repository, remove it (flume never removes a lock it did not make)")
	return b.String()
}

func (e *LockedError) Is(target error) bool { return target == ErrLocked }
func (e *LockedError) Unwrap() error        { return e.Err }

func names(us []RefUpdate) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.Name
	}
	return out
}

// conflicts reads the refs of a refused transaction and returns those not at
// the value the transaction expected.
func (repo *Repo) conflicts(ctx context.Context, updates []RefUpdate) ([]RefConflict, error) {
	names := make([]string, len(updates))
	for i, u := range updates {
		names[i] = u.Name
	}
	found, err := repo.readRefs(ctx, names)
	if err != nil {
		return nil, err
	}
	var out []RefConflict
	for _, u := range updates {
		want := u.Old
		if u.Op == Create {
			want = ""
		}
		if got := found[u.Name]; got != want {
			out = append(out, RefConflict{Name: u.Name, Expected: want, Found: got})
		}
	}
	return out, nil
}

// readRefs returns the current value of each named ref ("" when absent), in
// one git call.
func (repo *Repo) readRefs(ctx context.Context, names []string) (map[string]string, error) {
	args := append([]string{"for-each-ref", "--format=%(objectname) %(refname)", "--end-of-options"}, names...)
	out, err := repo.read(ctx, nil, args...)
	if err != nil {
		return nil, err
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	found := make(map[string]string, len(names))
	for line := range strings.SplitSeq(strings.TrimRight(string(out), "\n"), "\n") {
		id, name, ok := strings.Cut(line, " ")
		// for-each-ref matches prefixes too: keep exact names only.
		if ok && want[name] {
			found[name] = id
		}
	}
	return found, nil
}
