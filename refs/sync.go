package refs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/git"
)

// RemotePrefix is where clones made before the tracking list (TrackedPrefix)
// kept one tracking ref per record; sync reads them once and removes them.
const RemotePrefix = "refs/flume-remotes/"

// SyncAttempts bounds how often sync fetches again after a push the remote
// refused because another host pushed first.
const SyncAttempts = 8

// SyncReport says what a sync moved each way.
type SyncReport struct {
	Schema int    `json:"schema"`
	Remote string `json:"remote"`
	// Fetched are records of other hosts (or this host's, from another
	// clone) taken into refs/flume/.
	Fetched []string `json:"fetched"`
	// Pushed are this host's records sent to the remote; Deleted its
	// records removed there, and Removed other hosts' records their owner
	// removed, here.
	Pushed  []string `json:"pushed"`
	Deleted []string `json:"deleted"`
	Removed []string `json:"removed"`
	// Kept are records left as they are here, with why: an older copy on
	// the remote, or a copy that diverged from ours.
	Kept     map[string]string `json:"kept,omitempty"`
	Attempts int               `json:"attempts"`
}

// incomingPrefix is where sync fetched a remote's records before judging
// them, before it judged them by their commits alone; the first sync
// since removes what it left.
const incomingPrefix = "refs/flume-incoming/"

// owners reads the owner host of the records here that a sync decides on,
// by the commit each is at, in one read (R4): those that differ from the
// remote's copy, and the place of each claim that differs (claimOnOurs).
// A sync with nothing to move reads none; a ref read one at a
// time parsed the whole packed-refs file for each. A record that cannot
// be read has owner "".
func (s *Store) owners(ctx context.Context, here, there map[string]string) (map[string]string, error) {
	need := map[string]bool{}
	for ref, l := range here {
		if l == there[ref] {
			continue
		}
		need[ref] = true
		if place, ok := strings.CutPrefix(ref, ClaimPrefix); ok {
			need["refs/flume/places/"+place] = true
		}
	}
	for ref, r := range there {
		if place, ok := strings.CutPrefix(ref, ClaimPrefix); ok && here[ref] != r {
			need["refs/flume/places/"+place] = true
		}
	}
	refs := make([]string, 0, len(need))
	ids := make([]string, 0, len(need))
	for ref := range need {
		if id := here[ref]; id != "" && !strings.HasPrefix(ref, SnapshotPrefix) {
			refs, ids = append(refs, ref), append(ids, id)
		}
	}
	owners := make(map[string]string, len(refs))
	if len(ids) == 0 {
		return owners, nil
	}
	files, err := s.repo.FilesAt(ctx, ids, StateFile)
	if err != nil {
		return nil, err
	}
	for i, ref := range refs {
		if files[i].Type == "blob" {
			owners[ref] = hostOf(files[i].Data)
		}
	}
	return owners, nil
}

// claimOnOurs reports ref as a claim on a place whose record here is
// host's own.
func claimOnOurs(owners map[string]string, ref, host string) bool {
	place, ok := strings.CutPrefix(ref, ClaimPrefix)
	return ok && owners["refs/flume/places/"+place] == host
}

func hostOf(data []byte) string {
	var h struct {
		Host string `json:"host"`
	}
	if json.Unmarshal(data, &h) != nil {
		return ""
	}
	return h.Host
}

// Sync shares records with remote (R7). It lists the remote's
// refs/flume/*, fetches the commits of those that differ here (no ref
// moves), and judges each as untrusted input before anything here moves:
//
//   - a record that does not validate (malformed, a newer schema, a place
//     whose names, branch, path or stage do not agree) is never taken;
//   - a record naming this host is never taken from a remote: this host's
//     records are made here, and a copy that arrives from elsewhere (a
//     hostile host, or another clone that uses the same host name) would
//     otherwise be acted on as ours — tidied, reconciled, pushed back out;
//   - another host's record is taken into refs/flume/ only forward (a
//     fast-forward of what is here, never back: a stale fetch rolls
//     nothing back) and only while its owner stays the same.
//
// This host's own records are pushed atomically, each leased on what the
// remote had. A push refused because another host pushed first is fetched
// and decided again, at most SyncAttempts times. Only the owner writes a
// record, so records never need merging; a record whose copies diverged is
// kept here as it is and reported, as is every record refused.
func (s *Store) Sync(ctx context.Context, remote, host string) (*SyncReport, error) {
	var rep *SyncReport
	attempt := 0
	err := SyncRetry.Retry(ctx, func(ctx context.Context) error {
		attempt++
		var err error
		rep, err = s.syncOnce(ctx, remote, host)
		if rep != nil {
			rep.Attempts = attempt
		}
		return err
	})
	if err != nil && refusedPush(err) {
		// Every attempt was refused: say so once, with the last refusal.
		return nil, fmt.Errorf("sync with %s: still refused after %d attempts: %w", remote, attempt, errors.Unwrap(err))
	}
	return rep, err
}

// SyncRetry is how sync tries again when another host pushed first (its
// push refused, or a record moved here meanwhile, as another sync of this
// clone moves it): list, fetch and decide again after a jittered wait,
// SyncAttempts times at most.
var SyncRetry = RetryPolicy{Attempts: SyncAttempts, Base: 20 * time.Millisecond, Max: 640 * time.Millisecond, Again: refusedPush}

func refusedPush(err error) bool {
	var rejected *git.PushRejectedError
	return errors.As(err, &rejected) || lostRace(err)
}

func (s *Store) refMap(ctx context.Context, prefix string) (map[string]string, error) {
	refs, err := s.repo.ListRefs(ctx, prefix)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(refs))
	for _, r := range refs {
		m[Prefix+strings.TrimPrefix(r.Name, prefix)] = r.ID
	}
	return m, nil
}

// incoming judges the remote's copy of the record at ref, read from its
// commit (rf), with every check a local read makes: its owner, or why it
// is refused.
func (s *Store) incoming(ref string, rf git.RefFile) (string, error) {
	rec, err := s.check(ref, rf)
	if err != nil {
		return "", err
	}
	owner := hostOf(rec.Data)
	if owner == "" {
		return "", fmt.Errorf("%s: the record names no host", ref)
	}
	return owner, nil
}

func (s *Store) syncOnce(ctx context.Context, remote, host string) (*SyncReport, error) {
	facts, tracked, there, err := s.observeSync(ctx, remote, host)
	if err != nil {
		return nil, err
	}
	rep := &SyncReport{Schema: 1, Remote: remote, Kept: map[string]string{}}
	local, push, refused := planSync(facts, host, rep)
	if s.Fault != nil {
		s.Fault("fetched")
	}
	if local, err = s.leftIncoming(ctx, remote, local); err != nil {
		return nil, err
	}
	after := trackedAfter(tracked, there, refused, push)
	if len(push) == 0 {
		// Nothing goes out: the tracking list moves with the records
		// taken, in their transaction.
		moves, err := s.trackingMoves(ctx, remote, tracked, after)
		if err != nil {
			return nil, err
		}
		local = append(local, moves...)
	}
	if len(local) > 0 {
		if err := s.update(ctx, "", local); err != nil {
			return nil, err
		}
	}
	if len(push) == 0 {
		return rep, nil
	}
	if err := s.repo.PushLeasedAmong(ctx, remote, len(there), push); err != nil {
		return nil, err
	}
	if s.Fault != nil {
		s.Fault("pushed")
	}
	if err := s.moveTracking(ctx, remote, tracked, after); err != nil {
		return rep, fmt.Errorf("synced, but the tracking list did not follow (the next sync fetches again): %w", err)
	}
	return rep, nil
}

// planSync decides each record from its facts (decideSync) and returns
// what moves here, what is pushed and which of the remote's records are
// refused (their tracking refs stay as they were), reporting each in rep.
func planSync(facts []syncFact, host string, rep *SyncReport) (local []git.RefUpdate, push []git.PushUpdate, refused map[string]bool) {
	refused = map[string]bool{}
	for _, f := range facts {
		mv := decideSync(f, host)
		switch mv.Action {
		case syncPushDelete:
			push = append(push, git.PushUpdate{Ref: f.Ref, Expect: f.There})
			rep.Deleted = append(rep.Deleted, f.Ref)
		case syncPush:
			push = append(push, git.PushUpdate{Ref: f.Ref, Local: f.Here, Expect: f.There})
			rep.Pushed = append(rep.Pushed, f.Ref)
		case syncFetch:
			u := git.RefUpdate{Op: git.Update, Name: f.Ref, New: f.There, Old: f.Here}
			if f.Here == "" {
				u = git.RefUpdate{Op: git.Create, Name: f.Ref, New: f.There}
			}
			local = append(local, u)
			rep.Fetched = append(rep.Fetched, f.Ref)
		case syncRemove:
			local = append(local, git.RefUpdate{Op: git.Delete, Name: f.Ref, Old: f.Here})
			rep.Removed = append(rep.Removed, f.Ref)
		case syncRefuse:
			refused[f.Ref] = true
			rep.Kept[f.Ref] = mv.Why
		case syncKeep:
			rep.Kept[f.Ref] = mv.Why
		}
	}
	return local, push, refused
}

// leftIncoming adds to local the deletion of each incoming ref an older
// version's sync left.
func (s *Store) leftIncoming(ctx context.Context, remote string, local []git.RefUpdate) ([]git.RefUpdate, error) {
	left, err := s.repo.ListRefs(ctx, incomingPrefix+remote+"/")
	if err != nil {
		return nil, err
	}
	for _, r := range left {
		local = append(local, git.RefUpdate{Op: git.Delete, Name: r.Name, Old: r.ID})
	}
	return local, nil
}

// syncFact is what sync knows of one record that differs here and at the
// remote, before it decides what to do with it.
type syncFact struct {
	Ref string
	// Here and There are the record's commits in this clone and at the
	// remote, "" where it is absent; Seen is what this clone last took
	// from or pushed to the remote.
	Here, There, Seen string
	// Owner is the host our copy names (absent here: the remote's);
	// Theirs the host the remote's copy names; Invalid why the remote's
	// copy is not a record ("" when it is).
	Owner, Theirs, Invalid string
	// Ahead: ours descends from theirs; Behind: theirs from ours (read
	// only when both are present).
	Ahead, Behind bool
	// ClaimOnOurs: the record is a claim on a place this host owns.
	ClaimOnOurs bool
}

// syncAction is what sync does with one record.
type syncAction int

const (
	syncKeep       syncAction = iota // leave it as it is here (Why says why)
	syncRefuse                       // the remote's copy is not taken; its tracking ref stays
	syncFetch                        // take the remote's copy
	syncRemove                       // remove ours: its owner removed it there
	syncPush                         // push ours over the remote's
	syncPushDelete                   // remove the remote's: removed here since this clone pushed it
)

type syncMove struct {
	Action syncAction
	Why    string
}

// decideSync decides one record from its facts (R7): a host's own records
// go out, only forward, leased; another host's come in, only forward and
// only while their owner stays the same; a record naming this host is never
// taken from a remote, nor another host's claim on one of this host's
// places; anything invalid, diverged or moved by the wrong host is kept as
// it is here and reported.
func decideSync(f syncFact, host string) syncMove {
	l, r := f.Here, f.There
	mine := f.Owner == host
	refuse := func(format string, args ...any) syncMove {
		return syncMove{Action: syncRefuse, Why: fmt.Sprintf(format, args...)}
	}
	switch {
	case l == "" && f.Seen == r && r != "" && f.Theirs == host:
		return syncMove{Action: syncPushDelete}
	case l == "" && f.Invalid != "":
		return refuse("the remote's copy is not a valid record, not taken: %s", f.Invalid)
	case l == "" && f.Theirs == host:
		return refuse("the remote's copy names this host (%s) but was not made in this clone; a host's records are never taken from a remote", host)
	case r != "" && f.Invalid == "" && f.Theirs != host && f.ClaimOnOurs:
		return refuse("host %s's claim on a place of this host is not taken here: gates on this host judge this host's sessions (R8); a shared claim stays held at the remote", f.Theirs)
	case l == "":
		return syncMove{Action: syncFetch}
	case r == "" && !mine && f.Seen == l:
		return syncMove{Action: syncRemove}
	case r == "" && mine:
		return syncMove{Action: syncPush}
	case r == "":
		return syncMove{Action: syncKeep, Why: "another host's record the remote does not have"}
	case f.Ahead && mine:
		return syncMove{Action: syncPush}
	case f.Ahead:
		return syncMove{Action: syncKeep, Why: "the remote's copy is older"}
	case f.Invalid != "":
		// Only a copy we would take is judged: an older copy of ours is
		// replaced by a push whatever it holds.
		return refuse("the remote's copy is not a valid record, not taken: %s", f.Invalid)
	case f.Behind && mine:
		return refuse("the remote's copy %.12s moved this host's record past ours; only this clone writes it", r)
	case f.Behind && f.Theirs != f.Owner:
		return refuse("the remote's copy %.12s names host %q, ours %q; a record's owner never changes", r, f.Theirs, f.Owner)
	case f.Behind:
		return syncMove{Action: syncFetch}
	}
	return refuse("diverged from the remote's copy %.12s; only its owner (%s) may write it", r, orUnknown(f.Owner))
}

// observeSync lists the remote's records, fetches the objects of those
// that differ here, and reads the facts of every such record, in ref
// order (snapshots are never synced). It also returns the tracking list
// as it was and the remote's records as listed. No ref moves: a record
// is judged by its commit before anything here takes it, and where a
// fetch into refs wrote each record twice (taken, then copied), a first
// sync now writes it once, as git's fetch does.
func (s *Store) observeSync(ctx context.Context, remote, host string) ([]syncFact, map[string]string, map[string]string, error) {
	tracked, err := s.readTracking(ctx, remote)
	if err != nil {
		return nil, nil, nil, err
	}
	there, err := s.repo.ListRemote(ctx, remote, Prefix)
	if err != nil {
		return nil, nil, nil, err
	}
	here, err := s.refMap(ctx, Prefix)
	if err != nil {
		return nil, nil, nil, err
	}
	refs := differing(here, there)
	var ids []string
	for _, ref := range refs {
		if there[ref] != "" {
			ids = append(ids, there[ref])
		}
	}
	if len(ids) > 0 {
		if err := s.repo.FetchRefs(ctx, remote, false, ids...); err != nil {
			return nil, nil, nil, err
		}
	}
	files, err := s.repo.FilesOf(ctx, ids, StateFile)
	if err != nil {
		return nil, nil, nil, err
	}
	theirs := make(map[string]git.RefFile, len(ids))
	for _, rf := range files {
		theirs[rf.ID] = rf
	}
	owners, err := s.owners(ctx, here, there)
	if err != nil {
		return nil, nil, nil, err
	}
	var facts []syncFact
	for _, ref := range refs {
		f := syncFact{Ref: ref, Here: here[ref], There: there[ref], Seen: tracked.ids[ref], ClaimOnOurs: claimOnOurs(owners, ref, host)}
		if err := s.readFact(ctx, theirs, &f, owners); err != nil {
			return nil, nil, nil, err
		}
		facts = append(facts, f)
	}
	return facts, tracked.ids, there, nil
}

// differing are the records, in ref order, whose commits differ here and
// there; snapshots are never synced.
func differing(here, there map[string]string) []string {
	var refs []string
	for n, id := range there {
		if here[n] != id {
			refs = append(refs, n)
		}
	}
	for n, id := range here {
		if _, ok := there[n]; !ok && id != "" {
			refs = append(refs, n) // a ref that holds no object id is fsck's to name, not sync's
		}
	}
	refs = slices.DeleteFunc(refs, func(n string) bool { return strings.HasPrefix(n, SnapshotPrefix) })
	sort.Strings(refs)
	return refs
}

// readFact reads what decideSync needs beyond the two commits: who owns
// the record, what the remote's copy names and whether it is a record,
// and how the two copies are ordered.
func (s *Store) readFact(ctx context.Context, files map[string]git.RefFile, f *syncFact, owners map[string]string) error {
	if f.Here != "" {
		f.Owner = owners[f.Ref]
	}
	if f.There != "" {
		theirs, invalid := s.incoming(f.Ref, files[f.There])
		f.Theirs = theirs
		if invalid != nil {
			f.Invalid = invalid.Error()
		}
	}
	if f.Here == "" {
		f.Owner = f.Theirs
	}
	if f.Here == "" || f.There == "" {
		return nil
	}
	var err error
	if f.Ahead, err = s.repo.IsAncestor(ctx, f.There, f.Here); err != nil || f.Ahead {
		return err
	}
	f.Behind, err = s.repo.IsAncestor(ctx, f.Here, f.There)
	return err
}

// trackedAfter is what the remote holds, after a sync, of the records this
// clone took or made: what was fetched, then what was pushed over it;
// refused records keep the tracking ref they had.
func trackedAfter(seen, there map[string]string, refused map[string]bool, push []git.PushUpdate) map[string]string {
	want := map[string]string{}
	for ref, id := range there {
		if !refused[ref] {
			want[ref] = id
		}
	}
	for ref := range refused {
		if id := seen[ref]; id != "" {
			want[ref] = id
		}
	}
	for _, p := range push {
		if p.Local == "" {
			delete(want, p.Ref)
		} else {
			want[p.Ref] = p.Local
		}
	}
	return want
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// PushClaim makes a claim exclusive across hosts (R8): the claim just
// written here is pushed create-only (or over the copy this host last saw
// there), and counts as held only if the remote took it. Refused, the
// local claim is rolled back and the error names the remote.
func (s *Store) PushClaim(ctx context.Context, remote, place string, rec *Record) error {
	ref := ClaimRef(place)
	tracked, err := s.readTracking(ctx, remote)
	if err != nil {
		return err
	}
	expect := tracked.ids[ref]
	err = s.repo.PushLeased(ctx, remote, []git.PushUpdate{{Ref: ref, Local: rec.Commit, Expect: expect}})
	var rejected *git.PushRejectedError
	if errors.As(err, &rejected) {
		if _, derr := s.Write(ctx, []Change{{Ref: ref, Old: rec, Delete: true, Message: "roll back " + place + ": not taken on " + remote}}); derr != nil {
			return errors.Join(err, derr)
		}
		return &ClaimedError{Place: place, Remote: remote}
	}
	if err != nil {
		return err
	}
	return s.moveTracking(ctx, remote, map[string]string{ref: expect}, map[string]string{ref: rec.Commit})
}

// ReleasePushed removes a shared claim from the remote, leased on the copy
// this host pushed.
func (s *Store) ReleasePushed(ctx context.Context, remote, place string) error {
	ref := ClaimRef(place)
	tracked, err := s.readTracking(ctx, remote)
	if err != nil {
		return err
	}
	expect := tracked.ids[ref]
	if expect == "" {
		return nil
	}
	if err := s.repo.PushLeased(ctx, remote, []git.PushUpdate{{Ref: ref, Expect: expect}}); err != nil {
		return err
	}
	return s.moveTracking(ctx, remote, map[string]string{ref: expect}, map[string]string{})
}
