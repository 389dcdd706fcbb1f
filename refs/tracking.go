package refs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/git-flume/git-flume/internal/git"
)

// TrackedPrefix holds one ref per remote, refs/flume-tracked/<remote>: a
// commit whose file "tracked" lists, for each record this clone took from
// that remote or pushed to it, the commit the remote held once sync was
// done ("<id> <ref>" per line, sorted). Sync decides removals from it: a
// record of ours missing here whose remote copy is the one we pushed was
// removed here; another host's record missing there whose copy here is the
// one we took was removed by its owner (R7).
//
// One ref, not one per record: writing a thousand tracking refs cost a
// first sync more than its whole push. Clones made before kept
// one ref per record under RemotePrefix; they are read as the list and
// removed by the first write of it.
const TrackedPrefix = "refs/flume-tracked/"

// trackedFile is the list's file in a tracking commit.
const trackedFile = "tracked"

// TrackedRef is the ref holding what this clone knows remote holds.
func TrackedRef(remote string) string { return TrackedPrefix + remote }

// tracking is what this clone knows a remote holds of the records it took
// from it or pushed to it.
type tracking struct {
	commit string            // the list's commit; "" when there is none
	ids    map[string]string // record ref → the remote's commit
	legacy map[string]string // per-record tracking refs of older clones → id
}

// readTracking reads the tracking list of remote. A list that does not
// parse is an error naming its ref: sync then decides nothing rather than
// remove records on a list it cannot read.
func (s *Store) readTracking(ctx context.Context, remote string) (*tracking, error) {
	t := &tracking{ids: map[string]string{}, legacy: map[string]string{}}
	ref := TrackedRef(remote)
	rf, err := s.repo.ReadRefFile(ctx, ref, trackedFile)
	switch {
	case errors.Is(err, git.ErrNotExist):
	case err != nil:
		return nil, err
	case rf.Type != "commit" || !rf.Found || !rf.IsFile:
		return nil, &MalformedError{Ref: ref, Commit: rf.ID, Reason: "not a tracking list: no file " + trackedFile}
	default:
		t.commit = rf.ID
		if t.ids, err = parseTracked(rf.Data); err != nil {
			return nil, &MalformedError{Ref: ref, Commit: rf.ID, Reason: err.Error()}
		}
	}
	if t.commit != "" {
		// The list's first write removed the older refs.
		return t, nil
	}
	old := RemotePrefix + remote + "/"
	listed, err := s.repo.ListRefs(ctx, old)
	if err != nil {
		return nil, err
	}
	for _, r := range listed {
		t.legacy[r.Name] = r.ID
		t.ids[Prefix+strings.TrimPrefix(r.Name, old)] = r.ID
	}
	return t, nil
}

func parseTracked(data []byte) (map[string]string, error) {
	ids := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		id, ref, ok := strings.Cut(line, " ")
		if !ok || !fullHex(id) || !strings.HasPrefix(ref, Prefix) || git.CheckRefName(ref) != nil {
			return nil, fmt.Errorf("line %q is not \"<commit> %s…\"", line, Prefix)
		}
		ids[ref] = id
	}
	return ids, nil
}

func fullHex(id string) bool {
	if len(id) != 40 && len(id) != 64 {
		return false
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// moveTracking records (R7) that remote now holds want where this clone
// read base (a record ref → commit; a ref missing from want is no longer
// tracked). It is a compare-and-swap on the list (R2): when another sync moved
// it meanwhile, the list is read again and only the entries this sync
// decided, and the other left as they were, are changed.
func (s *Store) moveTracking(ctx context.Context, remote string, base, want map[string]string) error {
	return DefaultRetry.Retry(ctx, func(ctx context.Context) error {
		updates, err := s.trackingMoves(ctx, remote, base, want)
		if err != nil || len(updates) == 0 {
			return err
		}
		// A list moved by another sync is a *ConflictError: read again.
		return s.update(ctx, "", updates)
	})
}

// trackingMoves are the ref updates that move remote's tracking list from
// what it holds now to want where this clone read base (moveTracking),
// leased on the list read; none when the list stays as it is.
func (s *Store) trackingMoves(ctx context.Context, remote string, base, want map[string]string) ([]git.RefUpdate, error) {
	cur, err := s.readTracking(ctx, remote)
	if err != nil {
		return nil, err
	}
	next := maps.Clone(cur.ids)
	for r := range joinKeys(base, want) {
		if want[r] == base[r] || cur.ids[r] != base[r] {
			continue
		}
		if want[r] == "" {
			delete(next, r)
		} else {
			next[r] = want[r]
		}
	}
	// A first sync writes the list even when it is empty: it is
	// also the mark that this clone chose to share with remote.
	if maps.Equal(next, cur.ids) && len(cur.legacy) == 0 && cur.commit != "" {
		return nil, nil
	}
	commit, err := s.writeTracked(ctx, remote, next)
	if err != nil {
		return nil, err
	}
	ref := TrackedRef(remote)
	updates := []git.RefUpdate{{Op: git.Create, Name: ref, New: commit}}
	if cur.commit != "" {
		updates[0] = git.RefUpdate{Op: git.Update, Name: ref, New: commit, Old: cur.commit}
	}
	for _, name := range slices.Sorted(maps.Keys(cur.legacy)) {
		updates = append(updates, git.RefUpdate{Op: git.Delete, Name: name, Old: cur.legacy[name]})
	}
	return updates, nil
}

// Synced reports whether this clone has synced with remote before (it
// keeps a tracking list of it, or the per-record refs of an older clone):
// a remote records were shared with by choice.
func (s *Store) Synced(ctx context.Context, remote string) (bool, error) {
	t, err := s.readTracking(ctx, remote)
	if err != nil {
		return false, err
	}
	return t.commit != "" || len(t.legacy) > 0, nil
}

func (s *Store) writeTracked(ctx context.Context, remote string, ids map[string]string) (string, error) {
	var b bytes.Buffer
	for _, r := range slices.Sorted(maps.Keys(ids)) {
		fmt.Fprintf(&b, "%s %s\n", ids[r], r)
	}
	blob, err := s.repo.WriteBlob(ctx, b.Bytes())
	if err != nil {
		return "", err
	}
	tree, err := s.repo.WriteTree(ctx, []git.TreeEntry{{Name: trackedFile, ID: blob}})
	if err != nil {
		return "", err
	}
	return s.repo.WriteCommit(ctx, git.CommitSpec{Tree: tree, Message: "what " + remote + " holds of the records synced with it", When: s.Now()})
}

func joinKeys(a, b map[string]string) map[string]bool {
	keys := make(map[string]bool, len(a)+len(b))
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}
