package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/git-flume/git-flume/refs"
)

// HostPrefix holds one record per host that runs places for runners:
// refs/flume/hosts/<host>, saying when that host last shared its records
// (M4). Only its host writes it; sync carries it to every other.
const HostPrefix = "refs/flume/hosts/"

// HostKind is the host record's kind.
var HostKind = refs.Kind{Name: "host", Schema: 1, Validate: validateHostRecord}

// Host is when a host was last heard: the time it last shared its
// records, by its own clock, and how often it says it shares them while
// it runs places for runners.
type Host struct {
	Schema int       `json:"schema"`
	Kind   string    `json:"kind"` // always "host"
	Host   string    `json:"host"`
	Heard  time.Time `json:"heard"`
	// BeatSeconds is the host's beat: how often its watchers share
	// while a place of a runner is live there.
	BeatSeconds int `json:"beat_seconds"`
}

// maxBeat bounds a host's beat (R5): a day.
const maxBeat = 24 * 60 * 60

// Beat is h's beat as a duration.
func (h *Host) Beat() time.Duration { return time.Duration(h.BeatSeconds) * time.Second }

// SilentAfter is how long a host may go unheard before the places its
// watchers keep are shown as silent: three beats.
func (h *Host) SilentAfter() time.Duration { return 3 * h.Beat() }

// Silent reports whether h has gone unheard past SilentAfter at now.
func (h *Host) Silent(now time.Time) bool { return now.Sub(h.Heard) > h.SilentAfter() }

// HostRef is the ref of host's record.
func HostRef(host string) string { return HostPrefix + host }

func validateHostRecord(ref string, data []byte) (any, error) {
	var h Host
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("not a host record: %v", err)
	}
	name := strings.TrimPrefix(ref, HostPrefix)
	switch {
	case h.Kind != "host" || h.Schema != 1:
		return nil, fmt.Errorf("invalid host record: kind %q schema %d, want host 1", h.Kind, h.Schema)
	case h.Host != name:
		return nil, fmt.Errorf("invalid host record: host %q under ref name %q", h.Host, name)
	case h.Heard.IsZero():
		return nil, errors.New("invalid host record: heard is not set")
	case h.BeatSeconds < 1 || h.BeatSeconds > maxBeat:
		return nil, fmt.Errorf("invalid host record: a beat of %d seconds (1 to %d)", h.BeatSeconds, maxBeat)
	}
	if err := refs.ValidateHost(h.Host); err != nil {
		return nil, fmt.Errorf("invalid host record: %v", err)
	}
	return &h, nil
}

// Heard writes host's record as heard at now with beat, unless it says
// so already within half a beat (another of the host's watchers beat).
func Heard(ctx context.Context, s *refs.Store, host string, now time.Time, beat time.Duration) error {
	ref := HostRef(host)
	old, err := s.Read(ctx, ref)
	if err != nil && !errors.Is(err, refs.ErrNotFound) {
		return err
	}
	if old != nil {
		var h Host
		if old.Decode(&h) == nil && h.Beat() == beat && now.Sub(h.Heard) >= 0 && now.Sub(h.Heard) < beat/2 {
			return nil
		}
	}
	secs := int(beat / time.Second)
	h := &Host{Schema: 1, Kind: "host", Host: host, Heard: now.UTC(), BeatSeconds: min(max(secs, 1), maxBeat)}
	_, err = s.Write(ctx, []refs.Change{{Ref: ref, Old: old, State: h, Message: "heard " + host}})
	return err
}

// WorkPrefix is where, on the shared remote, a host that runs a place
// for a runner leaves its work every beat (M5): refs/flume-work/<place>, a
// commit whose parent is the place's branch head and whose tree is its
// worktree as it stood, untracked and uncommitted files too. Outside
// refs/flume/, sync never takes it for a record; adopt starts from it.
const WorkPrefix = "refs/flume-work/"
