package refs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// IncomingPrefix is where sync fetches a remote's records before judging
// them. Only what it accepts (and what this host pushed) reaches the
// tracking namespace, so the tracking refs are what this clone knows the
// remote holds of the records it took or made.
const IncomingPrefix = "refs/flume-incoming/"

// owners reads the owner host of the records here that a sync decides on,
// by the commit each is at, in one read (R4): those that differ from the
// remote's copy, and the place of each claim that differs (claimOnOurs).
// A sync with nothing to move reads none (issue 26); a ref read one at a
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

// Sync shares records with remote (R7). It fetches the remote's
// refs/flume/* into refs/flume-incoming/<remote>/ and judges each record
// there as untrusted input before anything here moves:
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
// push refused, or a record moved here meanwhile): fetch and decide again
// after a jittered wait, SyncAttempts times at most.
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

// incoming reads a fetched record as the record it would be at ref here,
// with every check a local read makes: its owner, or why it is refused.
func (s *Store) incoming(ctx context.Context, remote, ref string) (string, error) {
	rf, err := s.repo.ReadRefFile(ctx, IncomingPrefix+remote+"/"+strings.TrimPrefix(ref, Prefix), StateFile)
	if err != nil {
		return "", err
	}
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
	tracked, err := s.readTracking(ctx, remote)
	if err != nil {
		return nil, err
	}
	seen := tracked.ids // what this clone took from or pushed there
	in := IncomingPrefix + remote + "/"
	if err := s.repo.FetchRefs(ctx, remote, true, "+"+Prefix+"*:"+in+"*"); err != nil {
		return nil, err
	}
	there, err := s.refMap(ctx, in)
	if err != nil {
		return nil, err
	}
	here, err := s.refMap(ctx, Prefix)
	if err != nil {
		return nil, err
	}
	owners, err := s.owners(ctx, here, there)
	if err != nil {
		return nil, err
	}
	rep := &SyncReport{Schema: 1, Remote: remote, Kept: map[string]string{}}
	var local []git.RefUpdate
	var push []git.PushUpdate
	// refused are the remote's records this clone does not take: their
	// tracking refs stay as they were.
	refused := map[string]bool{}
	refuse := func(ref, why string) {
		refused[ref] = true
		rep.Kept[ref] = why
	}
	names := map[string]bool{}
	for n := range there {
		names[n] = true
	}
	for n := range here {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, ref := range sorted {
		if strings.HasPrefix(ref, SnapshotPrefix) {
			continue
		}
		l, r := here[ref], there[ref]
		if l == r {
			continue
		}
		// Ours is what this clone holds under our name; theirs what the
		// remote's copy says, once it validates.
		owner, theirs := "", ""
		if l != "" {
			owner = owners[ref]
		}
		var invalid error
		if r != "" {
			theirs, invalid = s.incoming(ctx, remote, ref)
		}
		if l == "" {
			owner = theirs
		}
		mine := owner == host
		switch {
		case l == "" && seen[ref] == r && r != "" && theirs == host:
			// Removed here since this clone pushed it: remove it there.
			push = append(push, git.PushUpdate{Ref: ref, Expect: r})
			rep.Deleted = append(rep.Deleted, ref)
		case l == "" && invalid != nil:
			refuse(ref, "the remote's copy is not a valid record, not taken: "+invalid.Error())
		case l == "" && theirs == host:
			refuse(ref, fmt.Sprintf("the remote's copy names this host (%s) but was not made in this clone; a host's records are never taken from a remote", host))
		case r != "" && invalid == nil && theirs != host && claimOnOurs(owners, ref, host):
			refuse(ref, fmt.Sprintf("host %s's claim on a place of this host is not taken here: gates on this host judge this host's sessions (R8); a shared claim stays held at the remote", theirs))
		case l == "":
			local = append(local, git.RefUpdate{Op: git.Create, Name: ref, New: r})
			rep.Fetched = append(rep.Fetched, ref)
		case r == "" && !mine && seen[ref] == l:
			// Its owner removed it there after we took it.
			local = append(local, git.RefUpdate{Op: git.Delete, Name: ref, Old: l})
			rep.Removed = append(rep.Removed, ref)
		case r == "" && mine:
			push = append(push, git.PushUpdate{Ref: ref, Local: l, Expect: ""})
			rep.Pushed = append(rep.Pushed, ref)
		case r == "":
			rep.Kept[ref] = "another host's record the remote does not have"
		default:
			ahead, err := s.repo.IsAncestor(ctx, r, l)
			if err != nil {
				return nil, err
			}
			behind := false
			if !ahead {
				if behind, err = s.repo.IsAncestor(ctx, l, r); err != nil {
					return nil, err
				}
			}
			switch {
			case ahead && mine:
				push = append(push, git.PushUpdate{Ref: ref, Local: l, Expect: r})
				rep.Pushed = append(rep.Pushed, ref)
			case ahead:
				rep.Kept[ref] = "the remote's copy is older"
			case invalid != nil:
				// Only a copy we would take is judged: an older copy of
				// ours is replaced by the push above whatever it holds.
				refuse(ref, "the remote's copy is not a valid record, not taken: "+invalid.Error())
			case behind && mine:
				refuse(ref, fmt.Sprintf("the remote's copy %.12s moved this host's record past ours; only this clone writes it", r))
			case behind && theirs != owner:
				refuse(ref, fmt.Sprintf("the remote's copy %.12s names host %q, ours %q; a record's owner never changes", r, theirs, owner))
			case behind:
				local = append(local, git.RefUpdate{Op: git.Update, Name: ref, New: r, Old: l})
				rep.Fetched = append(rep.Fetched, ref)
			default:
				refuse(ref, fmt.Sprintf("diverged from the remote's copy %.12s; only its owner (%s) may write it", r, orUnknown(owner)))
			}
		}
	}
	if s.Fault != nil {
		s.Fault("fetched")
	}
	if len(local) > 0 {
		if err := s.update(ctx, "", local); err != nil {
			return nil, err
		}
	}
	if err := s.repo.PushLeased(ctx, remote, push); err != nil {
		return nil, err
	}
	if s.Fault != nil {
		s.Fault("pushed")
	}
	// Track what the remote now holds of the records this clone took or
	// made: what was fetched, then what was pushed over it. Refused
	// records keep the tracking ref they had.
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
	if err := s.moveTracking(ctx, remote, seen, want); err != nil {
		return rep, fmt.Errorf("synced, but the tracking list did not follow (the next sync fetches again): %w", err)
	}
	return rep, nil
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
