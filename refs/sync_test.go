package refs_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/refs"
)

type rec struct {
	Schema int    `json:"schema"`
	Kind   string `json:"kind"`
	Host   string `json:"host"`
	N      int    `json:"n"`
}

func syncStore(t *testing.T, env []string, dir string) *refs.Store {
	t.Helper()
	repo, err := (&git.Runner{Env: env}).Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	s := refs.New(repo, refs.Kinds{{Name: "thing", Schema: 1}})
	s.Now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	return s
}

func bump(t *testing.T, s *refs.Store, ref string, host string) {
	t.Helper()
	_, err := s.Edit(context.Background(), ref, func(old *refs.Record) (refs.Change, error) {
		r := rec{Schema: 1, Kind: "thing", Host: host}
		if old != nil {
			if err := old.Decode(&r); err != nil {
				return refs.Change{}, err
			}
		}
		r.N++
		return refs.Change{Ref: ref, Old: old, State: r, Message: "bump"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func value(t *testing.T, s *refs.Store, ref string) int {
	t.Helper()
	r, err := s.Read(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	var v rec
	r.Decode(&v)
	return v.N
}

// TestSyncPushRefusedByAConcurrentPushConverges_R7: a push of this host's
// record that loses to a push made between its fetch and its push (another
// clone of the same host) is refused by the lease, fetched again, decided
// again and pushed: the remote ends at the newest record, nothing lost.
func TestSyncPushRefusedByAConcurrentPushConverges_R7(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	env := hermeticEnv(home)
	root := t.TempDir()
	remote := filepath.Join(root, "remote.git")
	run(t, env, "git", "init", "-q", "--bare", remote)
	a := filepath.Join(root, "a")
	run(t, env, "git", "clone", "-q", remote, a)
	sa := syncStore(t, env, a)
	const ref = refs.Prefix + "things/x"
	bump(t, sa, ref, "h") // n=1
	if _, err := sa.Sync(ctx, "origin", "h"); err != nil {
		t.Fatal(err)
	}
	bump(t, sa, ref, "h") // n=2
	// A second clone of the same host, with n=2, made now.
	a2 := filepath.Join(root, "a2")
	if err := os.CopyFS(a2, os.DirFS(a)); err != nil {
		t.Fatal(err)
	}
	sa2 := syncStore(t, env, a2)
	bump(t, sa, ref, "h") // n=3 in a only
	syncWithOnePushBetween(t, sa, sa2, "origin", "h")
	remoteRepo := filepath.Join(root, "check")
	run(t, env, "git", "clone", "-q", remote, remoteRepo)
	sc := syncStore(t, env, remoteRepo)
	if _, err := sc.Sync(ctx, "origin", "other"); err != nil {
		t.Fatal(err)
	}
	if n := value(t, sc, ref); n != 3 {
		t.Fatalf("remote has n=%d, want 3", n)
	}
}

// TestSyncNeverRollsBack_R7: another host's record is taken only forward,
// and this host's is never taken from the remote when ours is newer.
func TestSyncNeverRollsBack_R7(t *testing.T) {
	ctx := context.Background()
	env := hermeticEnv(t.TempDir())
	root := t.TempDir()
	remote := filepath.Join(root, "remote.git")
	stale := filepath.Join(root, "stale.git")
	run(t, env, "git", "init", "-q", "--bare", remote)
	run(t, env, "git", "init", "-q", "--bare", stale)
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	run(t, env, "git", "clone", "-q", remote, a)
	run(t, env, "git", "clone", "-q", remote, b)
	run(t, env, "git", "-C", b, "remote", "add", "stale", stale)
	run(t, env, "git", "-C", a, "remote", "add", "stale", stale)
	sa, sb := syncStore(t, env, a), syncStore(t, env, b)
	const ref = refs.Prefix + "things/a"
	bump(t, sa, ref, "A") // 1
	// The stale mirror gets n=1, then A moves on to n=2 and syncs.
	if _, err := sa.Sync(ctx, "stale", "A"); err != nil {
		t.Fatal(err)
	}
	bump(t, sa, ref, "A") // 2
	if _, err := sa.Sync(ctx, "origin", "A"); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Sync(ctx, "origin", "B"); err != nil {
		t.Fatal(err)
	}
	if n := value(t, sb, ref); n != 2 {
		t.Fatalf("B has n=%d, want 2", n)
	}
	// B syncs with the stale mirror: the older copy is kept out.
	rep, err := sb.Sync(ctx, "stale", "B")
	if err != nil {
		t.Fatal(err)
	}
	if n := value(t, sb, ref); n != 2 {
		t.Fatalf("a stale fetch rolled B back to n=%d", n)
	}
	if rep.Kept[ref] == "" {
		t.Fatalf("the stale copy was not reported: %+v", rep)
	}
	// A moves locally past what the remote has; a sync pushes, never
	// takes the remote's older copy.
	bump(t, sa, ref, "A") // 3
	if _, err := sa.Sync(ctx, "stale", "A"); err != nil {
		t.Fatal(err)
	}
	if n := value(t, sa, ref); n != 3 {
		t.Fatalf("A rolled back to n=%d", n)
	}
}

func run(t *testing.T, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// cloneOfNewRemote makes an empty bare remote and a clone of it, in a
// hermetic environment.
func cloneOfNewRemote(t *testing.T) (env []string, remote, clone string) {
	env = hermeticEnv(t.TempDir())
	root := t.TempDir()
	remote, clone = filepath.Join(root, "remote.git"), filepath.Join(root, "a")
	run(t, env, "git", "init", "-q", "--bare", remote)
	run(t, env, "git", "clone", "-q", remote, clone)
	return env, remote, clone
}

// trackedList reads the tracking list of remote in dir as git shows it.
func trackedList(t *testing.T, env []string, dir, remote string) string {
	t.Helper()
	cmd := exec.Command("git", "-C", dir, "cat-file", "blob", refs.TrackedRef(remote)+":tracked")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("read the tracking list of %s: %v", remote, err)
	}
	return string(out)
}

func gitOut(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

// TestSyncTakesOverPerRecordTrackingRefs_R7: a clone whose earlier syncs
// kept one tracking ref per record under refs/flume-remotes/ decides from
// them (a record of ours removed here is removed there), and its next sync
// replaces them with the one list.
func TestSyncTakesOverPerRecordTrackingRefs_R7(t *testing.T) {
	ctx := context.Background()
	env, remote, a := cloneOfNewRemote(t)
	sa := syncStore(t, env, a)
	const gone, kept = refs.Prefix + "things/gone", refs.Prefix + "things/kept"
	bump(t, sa, gone, "A")
	bump(t, sa, kept, "A")
	if _, err := sa.Sync(ctx, "origin", "A"); err != nil {
		t.Fatal(err)
	}
	// Turn the list back into what an older git-flume left.
	var legacy string
	for _, ref := range []string{gone, kept} {
		id := gitOut(t, env, "-C", a, "rev-parse", ref)
		legacy += "create " + refs.RemotePrefix + "origin/" + ref[len(refs.Prefix):] + " " + id
	}
	cmd := exec.Command("git", "-C", a, "update-ref", "--stdin")
	cmd.Env = env
	cmd.Stdin = strings.NewReader(legacy + "delete " + refs.TrackedRef("origin") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	run(t, env, "git", "-C", a, "update-ref", "-d", gone)

	rep, err := sa.Sync(ctx, "origin", "A")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Deleted) != 1 || rep.Deleted[0] != gone {
		t.Fatalf("deleted %v, want [%s]: the per-record refs were not read as what was pushed", rep.Deleted, gone)
	}
	if there := gitOut(t, env, "-C", remote, "for-each-ref", "--format=%(refname)", refs.Prefix); there != kept+"\n" {
		t.Fatalf("the remote holds %q, want only %s", there, kept)
	}
	if left := gitOut(t, env, "-C", a, "for-each-ref", refs.RemotePrefix); left != "" {
		t.Fatalf("per-record tracking refs left behind:\n%s", left)
	}
	want := gitOut(t, env, "-C", a, "rev-parse", kept)
	if got := trackedList(t, env, a, "origin"); got != want[:len(want)-1]+" "+kept+"\n" {
		t.Fatalf("tracking list %q, want only %s at %s", got, kept, want)
	}
}

// TestSyncTrackingListSurvivesAConcurrentSync_R7: a sync of the same clone
// that moves the tracking list between another's push and its write of the
// list is not undone by it: the list ends holding what the remote holds.
func TestSyncTrackingListSurvivesAConcurrentSync_R7(t *testing.T) {
	ctx := context.Background()
	env, remote, a := cloneOfNewRemote(t)
	sa, inner := syncStore(t, env, a), syncStore(t, env, a)
	bump(t, sa, refs.Prefix+"things/one", "A")
	ran := false
	sa.Fault = func(point string) {
		if point != "pushed" || ran {
			return
		}
		ran = true
		bump(t, inner, refs.Prefix+"things/two", "A")
		if _, err := inner.Sync(ctx, "origin", "A"); err != nil {
			t.Errorf("the concurrent sync: %v", err)
		}
	}
	if _, err := sa.Sync(ctx, "origin", "A"); err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Fatal("the concurrent sync never ran")
	}
	there := gitOut(t, env, "-C", remote, "for-each-ref", "--format=%(objectname) %(refname)", refs.Prefix)
	if got := trackedList(t, env, a, "origin"); got != there {
		t.Fatalf("tracking list\n%s\nthe remote holds\n%s", got, there)
	}
}

// TestSyncPushesManyRecordsFromScratchRepository_R7: a push of many records
// runs from a scratch repository of its own and means what a push from
// the clone means: the remote named by its relative URL gets every record,
// and the push leaves no scratch repository behind. One a killed push
// left an hour ago is removed, as is the shared one earlier versions kept;
// one a push beside it is using now is left to it.
func TestSyncPushesManyRecordsFromScratchRepository_R7(t *testing.T) {
	ctx := context.Background()
	env, root, remote, a := sharedRemote(t)
	trace := filepath.Join(root, "setup.trace")
	sa := syncStore(t, append(env, "GIT_TRACE_SETUP="+trace), a)
	for i := range 70 {
		bump(t, sa, refs.Prefix+"things/t"+strconv.Itoa(i), "A")
	}
	gitDir := filepath.Join(a, ".git")
	stale, busy, shared := filepath.Join(gitDir, "flume-push-1.git"), filepath.Join(gitDir, "flume-push-2.git"), filepath.Join(gitDir, "flume-push.git")
	for _, dir := range []string{stale, busy, shared} {
		if err := os.MkdirAll(filepath.Join(dir, "refs"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hourAgo := time.Now().Add(-61 * time.Minute)
	if err := os.Chtimes(stale, hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	rep, err := sa.Sync(ctx, "shared", "A")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Pushed) != 70 {
		t.Fatalf("pushed %d records, want 70", len(rep.Pushed))
	}
	setup, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`git_dir: \S*/\.git/flume-push-[0-9]+\.git\n`).Match(setup) {
		t.Fatalf("no git ran in a scratch repository:\n%s", setup)
	}
	here := gitOut(t, env, "-C", a, "for-each-ref", "--format=%(objectname) %(refname)", refs.Prefix)
	if there := gitOut(t, env, "-C", remote, "for-each-ref", "--format=%(objectname) %(refname)", refs.Prefix); there != here {
		t.Fatalf("the remote holds\n%s\nwant\n%s", there, here)
	}
	left, _ := filepath.Glob(filepath.Join(gitDir, "flume-push*"))
	if !slices.Equal(left, []string{busy}) {
		t.Fatalf("scratch repositories left: %q, want only the busy one", left)
	}
}

// sharedRecordsAndReceiver is a remote holding n records host A shared
// from clone a, and a new repository b with that remote, not yet synced.
func sharedRecordsAndReceiver(t *testing.T, n int) (env []string, root, a, b string) {
	t.Helper()
	env, root, _, a = sharedRemote(t)
	sa := syncStore(t, env, a)
	for i := range n {
		bump(t, sa, refs.Prefix+"things/t"+strconv.Itoa(i), "A")
	}
	if _, err := sa.Sync(context.Background(), "shared", "A"); err != nil {
		t.Fatal(err)
	}
	b = filepath.Join(root, "b")
	run(t, env, "git", "init", "-q", b)
	run(t, env, "git", "-C", b, "remote", "add", "shared", "../remote.git")
	return env, root, a, b
}

// TestSyncTakesRecordsWritingEachOnce_R7: a receiving sync judges the
// remote's records by their commits and writes no ref of its own for
// them (a fetch into refs wrote each twice): afterwards the clone holds
// the records taken and the tracking list, nothing else of flume's, and
// the incoming refs an older git-flume fetched into are gone.
func TestSyncTakesRecordsWritingEachOnce_R7(t *testing.T) {
	ctx := context.Background()
	env, _, a, b := sharedRecordsAndReceiver(t, 10)
	sb := syncStore(t, env, b)
	bump(t, sb, refs.Prefix+"things/mine", "B")
	old := gitOut(t, env, "-C", b, "rev-parse", refs.Prefix+"things/mine")
	run(t, env, "git", "-C", b, "update-ref", "refs/flume-incoming/shared/things/t0", strings.TrimSpace(old))
	rep, err := sb.Sync(ctx, "shared", "B")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Fetched) != 10 || len(rep.Pushed) != 1 {
		t.Fatalf("fetched %d, pushed %d; want 10 and 1", len(rep.Fetched), len(rep.Pushed))
	}
	var other []string
	for _, ref := range strings.Fields(gitOut(t, env, "-C", b, "for-each-ref", "--format=%(refname)")) {
		if !strings.HasPrefix(ref, refs.Prefix) && ref != refs.TrackedRef("shared") {
			other = append(other, ref)
		}
	}
	if len(other) > 0 {
		t.Fatalf("refs beside the records and the tracking list: %q", other)
	}
	for i := range 10 {
		ref := refs.Prefix + "things/t" + strconv.Itoa(i)
		if got, want := gitOut(t, env, "-C", b, "rev-parse", ref), gitOut(t, env, "-C", a, "rev-parse", ref); got != want {
			t.Fatalf("%s is %s here, %s where it was made", ref, got, want)
		}
	}
}

// TestSyncTakesRecordsAndItsListUnheard_R7: a sync that only takes
// records moves them and the tracking list in one transaction, as flume's
// own refs are moved: no reference-transaction hook runs (a shell per
// phase, telling nothing outside flume).
func TestSyncTakesRecordsAndItsListUnheard_R7(t *testing.T) {
	ctx := context.Background()
	env, root, _, b := sharedRecordsAndReceiver(t, 3)
	heard := filepath.Join(root, "heard")
	hook := filepath.Join(b, ".git", "hooks", "reference-transaction")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ncat >>'"+heard+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rep, err := syncStore(t, env, b).Sync(ctx, "shared", "B")
	if err != nil || len(rep.Fetched) != 3 {
		t.Fatalf("sync: %v, %+v; want 3 records taken", err, rep)
	}
	if list := trackedList(t, env, b, "shared"); strings.Count(list, "\n") != 3 {
		t.Errorf("tracking list after taking 3 records:\n%s", list)
	}
	if data, err := os.ReadFile(heard); err == nil {
		t.Errorf("the reference-transaction hook heard flume's own refs move:\n%s", data)
	}
}

// TestSyncLeasesNewRecordsOnBeingAbsent_R7: a push of many new records
// (one lease for all that must be absent) still loses to a push
// of one of them made between its fetch and its push, though the remote's
// copy is an older one of ours that a push without a lease would move
// forward: the first attempt is refused, the second pushes over what it
// then knows the remote holds.
func TestSyncLeasesNewRecordsOnBeingAbsent_R7(t *testing.T) {
	env, root, remote, a := sharedRemote(t)
	sa := syncStore(t, env, a)
	for i := range 70 {
		bump(t, sa, refs.Prefix+"things/t"+strconv.Itoa(i), "A") // n=1
	}
	a2 := filepath.Join(root, "a2") // the same host's other clone, at n=1
	if err := os.CopyFS(a2, os.DirFS(a)); err != nil {
		t.Fatal(err)
	}
	sa2 := syncStore(t, env, a2)
	const ref = refs.Prefix + "things/t0"
	bump(t, sa, ref, "A") // n=2 in a only
	syncWithOnePushBetween(t, sa, sa2, "shared", "A")
	want := gitOut(t, env, "-C", a, "rev-parse", ref)
	if got := gitOut(t, env, "--git-dir", remote, "rev-parse", ref); got != want {
		t.Fatalf("the remote holds %s at %s, want %s", ref, got, want)
	}
}

// TestSyncLeasesEachRecordWhereGitTracksThem_R7: where the remote's fetch
// refspec gives records remote-tracking refs, git's pushes keep them, and
// a bare lease would expect a new record at a tracking ref left from
// before: a push's scratch repository, where its bare lease is read, goes
// with it, so a record removed at the remote and made again here is
// pushed.
func TestSyncLeasesEachRecordWhereGitTracksThem_R7(t *testing.T) {
	ctx := context.Background()
	env, _, remote, a := sharedRemote(t)
	run(t, env, "git", "-C", a, "config", "--replace-all", "remote.shared.fetch", "+refs/*:refs/remotes/shared/*")
	sa := syncStore(t, env, a)
	bumpAll := func() {
		for i := range 70 {
			bump(t, sa, refs.Prefix+"things/t"+strconv.Itoa(i), "A")
		}
	}
	bumpAll()
	if _, err := sa.Sync(ctx, "shared", "A"); err != nil {
		t.Fatal(err)
	}
	const ref = refs.Prefix + "things/t0"
	if left, _ := filepath.Glob(filepath.Join(a, ".git", "flume-push*")); len(left) > 0 {
		t.Fatalf("the push left its scratch repository, with the tracking refs git kept in it: %q", left)
	}
	run(t, env, "git", "--git-dir", remote, "update-ref", "-d", ref)
	bumpAll()
	if _, err := sa.Sync(ctx, "shared", "A"); err != nil {
		t.Fatal(err)
	}
	want := gitOut(t, env, "-C", a, "rev-parse", ref)
	if got := gitOut(t, env, "--git-dir", remote, "rev-parse", ref); got != want {
		t.Fatalf("the remote holds %s at %s, want %s", ref, got, want)
	}
}

// syncWithOnePushBetween syncs s with remote as host while other syncs
// with it once between s's fetch and its push, and checks that s's first
// push was refused by its leases and its second attempt went through.
func syncWithOnePushBetween(t *testing.T, s, other *refs.Store, remote, host string) {
	t.Helper()
	ctx := context.Background()
	pushed := false
	s.Fault = func(point string) {
		if point == "fetched" && !pushed {
			pushed = true
			if _, err := other.Sync(ctx, remote, host); err != nil {
				t.Errorf("concurrent sync: %v", err)
			}
		}
	}
	rep, err := s.Sync(ctx, remote, host)
	if err != nil {
		t.Fatal(err)
	}
	if !pushed || rep.Attempts != 2 {
		t.Fatalf("attempts %d (concurrent push made: %v), want the first push refused by its leases and a second attempt", rep.Attempts, pushed)
	}
}

// sharedRemote makes, in a hermetic environment under root, an empty bare
// remote and a repository a that names it "shared" by a relative URL.
func sharedRemote(t *testing.T) (env []string, root, remote, a string) {
	t.Helper()
	env = hermeticEnv(t.TempDir())
	root = t.TempDir()
	remote = filepath.Join(root, "remote.git")
	run(t, env, "git", "init", "-q", "--bare", remote)
	a = filepath.Join(root, "a")
	run(t, env, "git", "init", "-q", a)
	run(t, env, "git", "-C", a, "remote", "add", "shared", "../remote.git")
	return env, root, remote, a
}

// TestSyncsOfOneCloneSideBySideAllSucceed_R7: syncs of one clone run side
// by side (a runner's watcher beats while a command it ran shares), each
// fetching into the same incoming refs while another host's records move.
// Each succeeds: a fetch that lost an incoming ref's lock to the other
// ("cannot lock ref … is at … but expected …") is tried again, never
// reported as a failed sync.
func TestSyncsOfOneCloneSideBySideAllSucceed_R7(t *testing.T) {
	ctx := context.Background()
	env, remote, a := cloneOfNewRemote(t)
	b := filepath.Join(filepath.Dir(remote), "b")
	run(t, env, "git", "clone", "-q", remote, b)
	sb := syncStore(t, env, b)
	for i := range 8 {
		bump(t, sb, refs.Prefix+"things/b"+strconv.Itoa(i), "B")
	}
	for round := range 6 {
		for i := range 8 {
			bump(t, sb, refs.Prefix+"things/b"+strconv.Itoa(i), "B")
		}
		if _, err := sb.Sync(ctx, "origin", "B"); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for k := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[k] = syncStore(t, env, a).Sync(ctx, "origin", "A")
			}()
		}
		wg.Wait()
		for k, err := range errs {
			if err != nil {
				t.Fatalf("round %d, sync %d beside three others: %v", round, k, err)
			}
		}
	}
}
