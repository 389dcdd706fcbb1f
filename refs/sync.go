package refs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/git"
)

// RemotePrefix is where a remote's records are tracked: never under
// refs/remotes/, where a user's `git fetch --prune` would delete them, and
// never under refs/flume/, which sync pushes (R7).
const RemotePrefix = "refs/flume-remotes/"

// TrackingRef is the ref tracking a record ref on remote.
func TrackingRef(remote, ref string) string {
	return RemotePrefix + remote + "/" + strings.TrimPrefix(ref, Prefix)
}

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

// OwnerOf reads a record's owner host (its "host" field); "" when it has
// none or is not a record.
func OwnerOf(ctx context.Context, repo *git.Repo, ref string) string {
	rf, err := repo.ReadRefFile(ctx, ref, StateFile)
	if err != nil || !rf.Found {
		return ""
	}
	var h struct {
		Host string `json:"host"`
	}
	if json.Unmarshal(rf.Data, &h) != nil {
		return ""
	}
	return h.Host
}

// Sync shares records with remote (R7): it fetches the remote's
// refs/flume/* into refs/flume-remotes/<remote>/, takes other hosts'
// records into refs/flume/ only forward (a fast-forward of what is here,
// never back: a stale fetch rolls nothing back), and pushes this host's
// own records atomically, each leased on what the remote had. A push
// refused because another host pushed first is fetched and decided again,
// at most SyncAttempts times. Only the owner writes a record, so records
// never need merging; a record whose copies diverged is kept here as it
// is and reported.
func (s *Store) Sync(ctx context.Context, remote, host string) (*SyncReport, error) {
	var last error
	for attempt := 1; attempt <= SyncAttempts; attempt++ {
		rep, err := s.syncOnce(ctx, remote, host)
		if rep != nil {
			rep.Attempts = attempt
		}
		var rejected *git.PushRejectedError
		var conflict *ConflictError
		if !errors.As(err, &rejected) && !errors.As(err, &conflict) {
			return rep, err
		}
		last = err
		// Another host pushed first: wait a jittered moment, then fetch
		// and decide again.
		select {
		case <-time.After(rand.N(time.Duration(10<<min(attempt, 6)) * time.Millisecond)):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, fmt.Errorf("sync with %s: still refused after %d attempts: %w", remote, SyncAttempts, last)
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

func (s *Store) syncOnce(ctx context.Context, remote, host string) (*SyncReport, error) {
	track := RemotePrefix + remote + "/"
	seen, err := s.refMap(ctx, track) // what the last sync saw there
	if err != nil {
		return nil, err
	}
	if err := s.repo.FetchRefs(ctx, remote, true, "+"+Prefix+"*:"+track+"*"); err != nil {
		return nil, err
	}
	there, err := s.refMap(ctx, track)
	if err != nil {
		return nil, err
	}
	here, err := s.refMap(ctx, Prefix)
	if err != nil {
		return nil, err
	}
	rep := &SyncReport{Schema: 1, Remote: remote, Kept: map[string]string{}}
	var local []git.RefUpdate
	var push []git.PushUpdate
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
		owner := ""
		if l != "" {
			owner = OwnerOf(ctx, s.repo, ref)
		} else {
			owner = OwnerOf(ctx, s.repo, TrackingRef(remote, ref))
		}
		mine := owner == host
		switch {
		case l == "" && mine && seen[ref] == r:
			// Removed here since the last sync: remove it there.
			push = append(push, git.PushUpdate{Ref: ref, Expect: r})
			rep.Deleted = append(rep.Deleted, ref)
		case l == "":
			// New to this clone (another host's, or ours from a clone
			// that lost it).
			local = append(local, git.RefUpdate{Op: git.Create, Name: ref, New: r})
			rep.Fetched = append(rep.Fetched, ref)
		case r == "" && !mine && seen[ref] == l:
			// Its owner removed it there after we saw it.
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
			case behind:
				local = append(local, git.RefUpdate{Op: git.Update, Name: ref, New: r, Old: l})
				rep.Fetched = append(rep.Fetched, ref)
			default:
				rep.Kept[ref] = fmt.Sprintf("diverged from the remote's copy %.12s; only its owner (%s) may write it", r, orUnknown(owner))
			}
		}
	}
	if s.Fault != nil {
		s.Fault("fetched")
	}
	if len(local) > 0 {
		if err := s.update(ctx, local); err != nil {
			return nil, err
		}
	}
	if err := s.repo.PushLeased(ctx, remote, push); err != nil {
		return nil, err
	}
	// The remote now has what was pushed: track it, as the next fetch
	// would.
	var tracked []git.RefUpdate
	for _, p := range push {
		u := git.RefUpdate{Op: git.Update, Name: TrackingRef(remote, p.Ref), New: p.Local, Old: p.Expect}
		switch {
		case p.Local == "":
			u = git.RefUpdate{Op: git.Delete, Name: u.Name, Old: p.Expect}
		case p.Expect == "":
			u = git.RefUpdate{Op: git.Create, Name: u.Name, New: p.Local}
		}
		tracked = append(tracked, u)
	}
	if len(tracked) > 0 {
		if err := s.repo.UpdateRefs(ctx, tracked); err != nil {
			return rep, fmt.Errorf("pushed, but the tracking refs did not follow (the next sync fetches them): %w", err)
		}
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
	expect, err := s.repo.RefValue(ctx, TrackingRef(remote, ref))
	if err != nil {
		return err
	}
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
	if expect == "" {
		return s.repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Create, Name: TrackingRef(remote, ref), New: rec.Commit}})
	}
	return s.repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Update, Name: TrackingRef(remote, ref), New: rec.Commit, Old: expect}})
}

// ReleasePushed removes a shared claim from the remote, leased on the copy
// this host pushed.
func (s *Store) ReleasePushed(ctx context.Context, remote, place string) error {
	ref := ClaimRef(place)
	expect, err := s.repo.RefValue(ctx, TrackingRef(remote, ref))
	if err != nil || expect == "" {
		return err
	}
	if err := s.repo.PushLeased(ctx, remote, []git.PushUpdate{{Ref: ref, Expect: expect}}); err != nil {
		return err
	}
	return s.repo.UpdateRefs(ctx, []git.RefUpdate{{Op: git.Delete, Name: TrackingRef(remote, ref), Old: expect}})
}
