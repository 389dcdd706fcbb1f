package refs

import (
	"strings"
	"testing"
)

// TestDecideSync_R7 is sync's decision, one row per rule: this host's
// records go out only forward; another host's come in only forward and
// while their owner stays; a record naming this host is never taken from a
// remote, nor another host's claim on a place of ours; anything invalid,
// diverged or moved by the wrong host is kept here and reported.
func TestDecideSync_R7(t *testing.T) {
	const me, other = "me", "other"
	for _, c := range []struct {
		name string
		f    syncFact
		want syncAction
		why  string
	}{
		{"ours removed here since we pushed it: removed there", syncFact{There: "b", Seen: "b", Theirs: me}, syncPushDelete, ""},
		{"an invalid copy we do not have", syncFact{There: "b", Invalid: "no schema", Theirs: other}, syncRefuse, "not a valid record"},
		{"a copy naming this host, not made here", syncFact{There: "b", Theirs: me, Owner: me}, syncRefuse, "never taken from a remote"},
		{"another host's claim on our place", syncFact{Here: "a", There: "b", Owner: other, Theirs: other, ClaimOnOurs: true}, syncRefuse, "claim on a place of this host"},
		{"another host's new record", syncFact{There: "b", Theirs: other, Owner: other}, syncFetch, ""},
		{"removed there by its owner after we took it", syncFact{Here: "a", Seen: "a", Owner: other}, syncRemove, ""},
		{"another host's record we hold, not taken from there", syncFact{Here: "a", Owner: other}, syncKeep, "the remote does not have"},
		{"ours, not there yet", syncFact{Here: "a", Owner: me}, syncPush, ""},
		{"ours, ahead of there", syncFact{Here: "a", There: "b", Owner: me, Theirs: me, Ahead: true}, syncPush, ""},
		{"ours ahead of an invalid copy: replaced", syncFact{Here: "a", There: "b", Owner: me, Invalid: "x", Ahead: true}, syncPush, ""},
		{"another host's, ours is newer", syncFact{Here: "a", There: "b", Owner: other, Theirs: other, Ahead: true}, syncKeep, "older"},
		{"a newer copy that is invalid", syncFact{Here: "a", There: "b", Owner: other, Invalid: "x", Behind: true}, syncRefuse, "not a valid record"},
		{"ours moved past by the remote", syncFact{Here: "a", There: "b", Owner: me, Theirs: me, Behind: true}, syncRefuse, "only this clone writes it"},
		{"a newer copy naming another owner", syncFact{Here: "a", There: "b", Owner: other, Theirs: "third", Behind: true}, syncRefuse, "owner never changes"},
		{"another host's, moved forward there", syncFact{Here: "a", There: "b", Owner: other, Theirs: other, Behind: true}, syncFetch, ""},
		{"diverged", syncFact{Here: "a", There: "b", Owner: other, Theirs: other}, syncRefuse, "diverged"},
	} {
		mv := decideSync(c.f, me)
		if mv.Action != c.want || !strings.Contains(mv.Why, c.why) {
			t.Errorf("%s: got %d %q, want %d …%q…", c.name, mv.Action, mv.Why, c.want, c.why)
		}
	}
}

// TestDifferingSkipsWhatSyncLeaves: sync looks only at records whose
// commits differ here and there, never at snapshots, and never at a ref
// here that holds no object id (fsck names it; sync carries on).
func TestDifferingSkipsWhatSyncLeaves(t *testing.T) {
	here := map[string]string{"refs/flume/places/a": "1", "refs/flume/places/same": "2", "refs/flume/places/garbled": "",
		SnapshotPrefix + "x": "3", "refs/flume/places/mine": "4"}
	there := map[string]string{"refs/flume/places/a": "9", "refs/flume/places/same": "2", "refs/flume/places/theirs": "5"}
	got := strings.Join(differing(here, there), " ")
	if want := "refs/flume/places/a refs/flume/places/mine refs/flume/places/theirs"; got != want {
		t.Fatalf("differing: %q, want %q", got, want)
	}
}
