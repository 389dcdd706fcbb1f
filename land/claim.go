package land

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
)

// ClaimPrefix is where, on a shared remote, the lander holding a target's
// queue says so (Q11): refs/flume-land-claims/<target>, outside
// refs/flume/ so that sync never carries a claim as a record: a claim is
// the remote's, moved only by leased pushes.
const ClaimPrefix = "refs/flume-land-claims/"

// seenPrefix keeps, per remote, the claims this clone last fetched from
// it: refs/flume-land/<remote's digest>/<target>, read to lease the next
// push.
const seenPrefix = "refs/flume-land/"

// seenRef is where remote's claims are fetched to: the remote named by a
// digest, since a remote may be a path or a URL.
func seenRef(remote string) string {
	sum := sha256.Sum256([]byte(remote))
	return seenPrefix + hex.EncodeToString(sum[:6]) + "/"
}

// claimFor is how long a claim holds without its lander renewing it (at
// each batch): a lander killed holding one stops the other hosts' for at
// most this long, and its own host takes it back at once.
const claimFor = 15 * time.Minute

// Claim is a host's lander holding a shared target's queue.
type Claim struct {
	Schema int       `json:"schema"`
	Kind   string    `json:"kind"` // always "landclaim"
	Target string    `json:"target"`
	Host   string    `json:"host"`
	PID    int       `json:"pid"`
	At     time.Time `json:"at"`
	Until  time.Time `json:"until"`
}

func checkClaim(target string, c *Claim) error {
	if c.Kind != "landclaim" || c.Schema != 1 {
		return fmt.Errorf("kind %q schema %d, want landclaim 1", c.Kind, c.Schema)
	}
	if c.Target != target || git.CheckRefName("refs/heads/"+c.Target) != nil {
		return fmt.Errorf("target %q under ref name %q", c.Target, target)
	}
	if err := refs.ValidateHost(c.Host); err != nil {
		return err
	}
	if c.PID <= 0 || c.Until.Before(c.At) {
		return fmt.Errorf("pid %d, held %s to %s", c.PID, c.At, c.Until)
	}
	return nil
}

// HeldError is a shared target's queue another host's lander holds.
type HeldError struct {
	Target, Remote, Host string
	Until                time.Time
}

func (e *HeldError) Error() string {
	if e.Host == "" {
		return fmt.Sprintf("%s on %s: another lander took its queue first; git flume land --wait waits for it", e.Target, e.Remote)
	}
	return fmt.Sprintf("%s on %s: host %s's lander holds its queue (until %s, unless it lets go first); git flume land --wait waits for it",
		e.Target, e.Remote, e.Host, e.Until.UTC().Format(time.RFC3339))
}

// Unwrap makes a held queue a refusal (exit 4): nothing was changed.
func (e *HeldError) Unwrap() error { return &stage.RefusedError{Place: e.Target, Reason: e.Error()} }

// hold takes, or renews, this host's claim on target's queue at remote
// (Q11): the claim there is read, and the new one pushed leased on it, so
// of two landers only one holds it. A claim of another host not past its
// time is a *HeldError; one past it, or this host's of a lander no longer
// running, is taken over.
func (l *Lander) hold(ctx context.Context, remote, target string) error {
	repo, env := l.r.Git, l.r.Env
	seen := seenRef(remote)
	if err := repo.FetchRefs(ctx, remote, true, "+"+ClaimPrefix+"*:"+seen+"*"); err != nil {
		return fmt.Errorf("%s on %s: read its claim: %w", target, remote, err)
	}
	expect := ""
	rf, err := repo.ReadRefFile(ctx, seen+target, "state.json")
	switch {
	case errors.Is(err, git.ErrNotExist):
	case err != nil:
		return err
	default:
		expect = rf.ID
		var c Claim
		if json.Unmarshal(rf.Data, &c) == nil && checkClaim(target, &c) == nil && c.Host != env.Host {
			// judged by this host's clock, never by the times it says
			until := l.firstSeen(remote, target, rf.ID).Add(min(c.Until.Sub(c.At), claimFor))
			if env.ClockNow().Before(until) {
				return &HeldError{Target: target, Remote: remote, Host: c.Host, Until: until}
			}
		}
		// Ours (a lander of this host holds the repository's lock only
		// while it runs: this is the one, or one that is gone), past its
		// time, or unreadable: taken over, leased on what was read.
	}
	now := env.ClockNow().UTC()
	data, err := json.Marshal(&Claim{Schema: 1, Kind: "landclaim", Target: target, Host: env.Host, PID: env.PID, At: now, Until: now.Add(claimFor)})
	if err != nil {
		return err
	}
	commit, err := repo.WriteState(ctx, "state.json", data, git.CommitSpec{Message: "land: " + env.Host + " holds " + target, When: now})
	if err != nil {
		return err
	}
	err = repo.PushLeased(ctx, remote, []git.PushUpdate{{Ref: ClaimPrefix + target, Local: commit, Expect: expect}})
	if errors.As(err, new(*git.PushRejectedError)) {
		return &HeldError{Target: target, Remote: remote}
	}
	if err != nil {
		return err
	}
	l.held[remote+" "+target] = commit
	return nil
}

// firstSeen (Q11) is when this clone first saw the claim id on target's queue
// at remote, by its own clock (kept in .git/flume/land-claims): a claim
// holds at most claimFor from then, whatever times it says. One that
// said 2099 held every other host off until then, whose clock lied.
func (l *Lander) firstSeen(remote, target, id string) time.Time {
	sum := sha256.Sum256([]byte(remote + "\x00" + target))
	path := filepath.Join(l.r.Git.CommonDir, "flume", "land-claims", hex.EncodeToString(sum[:8]))
	now := l.r.Env.ClockNow()
	data, err := os.ReadFile(path)
	if f := strings.Fields(string(data)); err == nil && len(f) == 2 && f[0] == id {
		if t, err := time.Parse(time.RFC3339Nano, f[1]); err == nil && !t.After(now) {
			return t
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		_ = stage.ReplaceFile(path, []byte(id+" "+now.UTC().Format(time.RFC3339Nano)+"\n"), 0o644)
	}
	return now
}

// letGo removes each claim this run holds, leased on what it pushed; one
// a lander of another host took over meanwhile stays.
func (l *Lander) letGo(ctx context.Context) {
	for key, commit := range l.held {
		remote, target, _ := strings.Cut(key, " ")
		_ = l.r.Git.PushLeased(context.WithoutCancel(ctx), remote, []git.PushUpdate{{Ref: ClaimPrefix + target, Expect: commit}})
	}
	l.held = nil
}

// holdOrWait holds target's queue, or with Wait, waits for another
// host's lander to let go of it (or for its claim to run out).
func (l *Lander) holdOrWait(ctx context.Context, remote, target string) error {
	for {
		err := l.hold(ctx, remote, target)
		var held *HeldError
		if !l.Wait || !errors.As(err, &held) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
