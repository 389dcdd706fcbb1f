package promote_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/promote"
	"github.com/git-flume/git-flume/promote/request"
)

// directWork is a direct request (seed 001) driven from Go: the print pane
// starts no agent, so the test plays each task's worker in the checkouts
// themselves.
type directWork struct {
	*testRequest
	req request.Request
}

// newDirect makes repositories app and lib under a new workspace root and
// a direct request over them with tasks (none started yet).
func newDirect(t *testing.T, id string, tasks ...request.Task) *directWork {
	t.Helper()
	r := newRoot(t, id)
	root := r.root
	repos := map[string]string{}
	for _, name := range []string{"app", "lib"} {
		dir := filepath.Join(root, name)
		r.git(root, "init", "-q", "--template=", "-b", "main", dir)
		os.WriteFile(filepath.Join(dir, "base.txt"), []byte("base\n"), 0o644)
		r.git(dir, "add", ".")
		r.git(dir, "commit", "-q", "-m", "base")
		r.names = append(r.names, name)
		repos[name] = dir
	}
	return &directWork{testRequest: r, req: request.Request{Mode: request.ModeDirect, ID: id, Goal: "change app, then say what changed", Repositories: repos, Tasks: tasks}}
}

func changeTask(id string) request.Task {
	return request.Task{ID: id, Kind: "changeset", Requirements: "add change.txt to app", Deliverable: "a commit in app"}
}

func textTask(id string, context ...string) request.Task {
	return request.Task{ID: id, Kind: "text", Requirements: "say what app holds", Deliverable: "an answer", ContextFrom: context, DependsOn: context}
}

// start starts request d (or another over the same root) as its own id.
func (d *directWork) start(fault func(string)) error {
	data, _ := json.Marshal(d.req)
	_, err := promote.Begin(context.Background(), d.penv(fault), d.root, data, promote.StartOptions{Program: testProgram})
	return err
}

// play acts as the running task's worker once: a changeset task commits
// change-<task>.txt in app; every task ends its turn with reply.
func (d *directWork) play(reply string) {
	d.t.Helper()
	st := d.status()
	if st.Worker == nil || st.Worker.Ended {
		d.t.Fatalf("no worker runs: %+v", st)
	}
	transcript := filepath.Join(d.home(), "t", st.Worker.Session+".jsonl")
	if _, err := os.Stat(transcript); err == nil {
		return // played already
	}
	var kind string
	for _, t := range d.req.Tasks {
		if t.ID == st.Task {
			kind = t.Kind
		}
	}
	if kind == "changeset" {
		app := filepath.Join(d.root, "app")
		os.WriteFile(filepath.Join(app, "change-"+st.Task+".txt"), []byte(st.Task+"\n"), 0o644)
		d.git(app, "add", "change-"+st.Task+".txt")
		d.git(app, "commit", "-q", "-m", "change "+st.Task)
	}
	prompt, err := os.ReadFile(st.Worker.PromptFile)
	if err != nil {
		d.t.Fatal(err)
	}
	writeTranscript(d.t, transcript, string(prompt), reply)
}

func (d *directWork) home() string { return filepath.Join(filepath.Dir(d.root), "home") }

// observe follows the request until its task or phase moves on: one
// step reads the transcript found, the next what it says.
func (d *directWork) observe() error {
	return d.observeWith(nil)
}

func (d *directWork) observeWith(fault func(string)) error {
	before := d.status()
	for range 5 {
		if _, err := promote.Observe(context.Background(), d.penv(fault), d.root, d.id, true); err != nil {
			return err
		}
		if st := d.status(); st.Phase != before.Phase || st.Task != before.Task {
			return nil
		}
	}
	return nil
}

// drive plays every task's worker and observes until the request ends.
func (d *directWork) drive() *promote.Status {
	d.t.Helper()
	for range 2 * len(d.req.Tasks) {
		st := d.status()
		if st.Phase != request.PhaseWorking {
			return st
		}
		d.play("task " + st.Task + " is done")
		if err := d.observe(); err != nil {
			d.t.Fatal(err)
		}
	}
	d.t.Fatalf("request %s did not end: %+v", d.id, d.status())
	return nil
}

// reservation is the id of the request this host's reservation of a
// checkout names, "" when there is none.
func (d *directWork) reservation(name string) string {
	out, err := execGit(d.env, filepath.Join(d.root, name), "cat-file", "-p", request.ReservationPrefix+"h:state.json")
	if err != nil {
		return ""
	}
	var res request.Reservation
	json.Unmarshal([]byte(out), &res)
	return res.Request
}

func (d *directWork) status() *promote.Status {
	d.t.Helper()
	st, err := promote.ReadStatus(context.Background(), d.penv(nil), d.root, d.id)
	if err != nil {
		d.t.Fatal(err)
	}
	return st
}

// other is a second request over the same workspace.
func (d *directWork) other(id string, repos []string, tasks ...request.Task) *directWork {
	o := &directWork{testRequest: &testRequest{t: d.t, root: d.root, id: id, env: d.env, names: repos}, req: d.req}
	o.req.ID, o.req.Tasks, o.req.Repositories = id, tasks, map[string]string{}
	for _, name := range repos {
		o.req.Repositories[name] = filepath.Join(d.root, name)
	}
	return o
}

// TestDirectWorkReportsEachRepository_P9_P11: a write request runs its tasks one
// after another in the checkouts themselves, a fresh worker each, the
// later one told what the earlier one ended with; while it writes, every
// selected checkout and the workspace are reserved; at its end each
// repository has its change report (new commits, files, what was already
// uncommitted and still is) and nothing is reserved any more.
func TestDirectWorkReportsEachRepository_P9_P11(t *testing.T) {
	d := newDirect(t, "both", changeTask("change"), textTask("answer", "change"))
	os.WriteFile(filepath.Join(d.root, "app", "notes.txt"), []byte("the user's own\n"), 0o644)
	if err := d.start(nil); err != nil {
		t.Fatal(err)
	}
	st := d.status()
	if st.Mode != request.ModeDirect || st.Phase != request.PhaseWorking || st.Task != "change" {
		t.Fatalf("after start: mode %s phase %s task %s", st.Mode, st.Phase, st.Task)
	}
	for _, name := range d.names {
		if got := d.reservation(name); got != "both" || !st.Members[name].Reserved {
			t.Fatalf("%s is reserved by %q (status %v), want both", name, got, st.Members[name].Reserved)
		}
		if wt := st.Members[name].WorkerTree.Path; wt != filepath.Join(d.root, name) {
			t.Fatalf("%s's worker works in %s, not the checkout", name, wt)
		}
	}
	if _, err := os.Stat(filepath.Join(d.root, ".flume", "reservation")); err != nil {
		t.Fatalf("the workspace is not reserved: %v", err)
	}
	d.play("added change-change.txt to app")
	if err := d.observe(); err != nil {
		t.Fatal(err)
	}
	st = d.status()
	if st.Phase != request.PhaseWorking || st.Task != "answer" || len(st.Tasks) != 1 {
		t.Fatalf("after the first task: phase %s task %s tasks %+v", st.Phase, st.Task, st.Tasks)
	}
	prompt, _ := os.ReadFile(st.Worker.PromptFile)
	for _, want := range []string{"added change-change.txt to app", "Read only", "Standing orders", filepath.Join(d.root, "lib")} {
		if !strings.Contains(string(prompt), want) {
			t.Fatalf("the second task's prompt lacks %q:\n%s", want, prompt)
		}
	}
	d.play("app holds change-change.txt")
	if err := d.observe(); err != nil {
		t.Fatal(err)
	}
	st = d.status()
	if st.Phase != request.PhaseDone || len(st.Tasks) != 2 || st.Tasks[1].Answer != "app holds change-change.txt" {
		t.Fatalf("at the end: phase %s tasks %+v", st.Phase, st.Tasks)
	}
	app, lib := st.Members["app"].Report, st.Members["lib"].Report
	if app == nil || lib == nil {
		t.Fatalf("no report: app %v lib %v", app, lib)
	}
	if len(app.Commits) != 1 || !strings.HasSuffix(app.Commits[0], " change change") || !slices.Equal(app.Files, []string{"A change-change.txt"}) ||
		!slices.Equal(app.Dirty, []string{"notes.txt"}) || !slices.Equal(app.DirtyBefore, []string{"notes.txt"}) || app.Stale != "" {
		t.Fatalf("app's report: %+v", app)
	}
	if lib.From != lib.To || len(lib.Commits) != 0 || lib.Stale != "" {
		t.Fatalf("lib's report: %+v", lib)
	}
	for _, name := range d.names {
		if got := d.reservation(name); got != "" {
			t.Fatalf("%s is still reserved by %s", name, got)
		}
	}
	if _, err := os.Stat(filepath.Join(d.root, ".flume", "reservation")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the workspace is still reserved: %v", err)
	}
	// Direct work has no checked integration.
	_, err := promote.StageWorkspace(context.Background(), d.penv(nil), promote.RequestOptions{Root: d.root, ID: d.id, Expected: promote.Expected{}})
	if err == nil || !strings.Contains(err.Error(), "no checked integration") {
		t.Fatalf("stage of direct work: %v", err)
	}
}

// TestDirectReservationRefusedWhole_P10: a write request is refused whole on
// any member's conflict — the workspace reserved, one checkout reserved by
// a request whose worker is not proved stopped, a checked request staged
// for promotion into one — and writes nothing in any member; once the
// holder is aborted (its worker proved gone) the same request is admitted.
// Checked staging waits while direct work holds a checkout.
func TestDirectReservationRefusedWhole_P10(t *testing.T) {
	d := newDirect(t, "first", changeTask("change"))
	d.req.Repositories = map[string]string{"app": filepath.Join(d.root, "app")}
	if err := d.start(nil); err != nil {
		t.Fatal(err)
	}
	second := d.other("second", []string{"app", "lib"}, changeTask("change"))
	err := second.start(nil)
	if err == nil || !strings.Contains(err.Error(), "the workspace is reserved by direct request first") {
		t.Fatalf("a second write request in a reserved workspace: %v", err)
	}
	// The workspace's reservation lost (removed by hand): the checkout's
	// own still refuses, naming the member, and nothing is written.
	os.Remove(filepath.Join(d.root, ".flume", "reservation"))
	err = second.start(nil)
	if err == nil || !strings.Contains(err.Error(), "app: its checkout is reserved by direct request first (working") {
		t.Fatalf("a second write request over a reserved checkout: %v", err)
	}
	for _, name := range []string{"app", "lib"} {
		if out, err := execGit(d.env, filepath.Join(d.root, name), "for-each-ref", "refs/flume/workspaces/second"); err != nil || out != "" {
			t.Fatalf("%s records the refused request: %q %v", name, out, err)
		}
	}
	if got := d.reservation("lib"); got != "" {
		t.Fatalf("lib was reserved by %s for a refused request", got)
	}
	// A read request reserves nothing and is not refused.
	reader := d.other("reader", []string{"app", "lib"}, textTask("look"))
	if err := reader.start(nil); err != nil {
		t.Fatalf("a read request beside a write: %v", err)
	}
	if _, err := promote.Abort(context.Background(), d.penv(nil), promote.RequestOptions{Root: d.root, ID: "first"}); err != nil {
		t.Fatal(err)
	}
	if got := d.reservation("app"); got != "" {
		t.Fatalf("after abort app is still reserved by %s", got)
	}
	if err := second.start(nil); err != nil {
		t.Fatalf("after the holder was aborted: %v", err)
	}
	if _, err := promote.Abort(context.Background(), d.penv(nil), promote.RequestOptions{Root: d.root, ID: "second"}); err != nil {
		t.Fatal(err)
	}

	// A checked request staged in a member refuses direct work there, and
	// direct work in a checkout holds off a checked request's staging.
	c := newRequest(t, 1)
	cd := &directWork{testRequest: &testRequest{t: t, root: c.root, id: "direct", env: c.env, names: c.names}}
	cd.req = request.Request{Mode: request.ModeDirect, ID: "direct", Goal: "g", Repositories: map[string]string{"r0": filepath.Join(c.root, "r0")},
		Tasks: []request.Task{{ID: "t", Kind: "changeset", Requirements: "r", Deliverable: "d"}}}
	if err := cd.start(nil); err != nil {
		t.Fatal(err)
	}
	if err := c.stage(nil); err == nil || !strings.Contains(err.Error(), "reserved by direct request direct") {
		t.Fatalf("staging beside direct work: %v", err)
	}
	if _, err := promote.Abort(context.Background(), cd.penv(nil), promote.RequestOptions{Root: c.root, ID: "direct"}); err != nil {
		t.Fatal(err)
	}
	if err := c.stage(nil); err != nil {
		t.Fatal(err)
	}
	cd.req.ID = "direct2"
	if err := cd.start(nil); err == nil || !strings.Contains(err.Error(), "r0: checked request req is staged and promotes into main next") {
		t.Fatalf("direct work over a staged checked request: %v", err)
	}
}

// TestDirectReadWarnsOfStaleReads_P11: a read request reserves nothing; a
// checkout that changed while it was read is reported stale, one that did
// not is not.
func TestDirectReadWarnsOfStaleReads_P11(t *testing.T) {
	d := newDirect(t, "look", textTask("look"))
	if err := d.start(nil); err != nil {
		t.Fatal(err)
	}
	if got := d.reservation("app"); got != "" {
		t.Fatalf("a read request reserved app for %s", got)
	}
	lib := filepath.Join(d.root, "lib")
	os.WriteFile(filepath.Join(lib, "meanwhile.txt"), []byte("x\n"), 0o644)
	d.git(lib, "add", ".")
	d.git(lib, "commit", "-q", "-m", "meanwhile")
	st := d.drive()
	if st.Phase != request.PhaseDone {
		t.Fatalf("phase %s", st.Phase)
	}
	if r := st.Members["lib"].Report; r == nil || !strings.Contains(r.Stale, "read while main moved from") {
		t.Fatalf("lib's report: %+v", r)
	}
	if r := st.Members["app"].Report; r == nil || r.Stale != "" {
		t.Fatalf("app's report: %+v", r)
	}
	// An uncommitted change counts too.
	d2 := newDirect(t, "look2", textTask("look"))
	if err := d2.start(nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d2.root, "app", "base.txt"), []byte("edited\n"), 0o644)
	if r := d2.drive().Members["app"].Report; r == nil || r.Stale != "read while its files changed" {
		t.Fatalf("app's report after an uncommitted edit: %+v", r)
	}
}

// crashNth stops at the nth time point is reached, as a SIGKILL would.
func crashNth(point string, n int) func(string) {
	seen := 0
	return func(p string) {
		if p == point {
			if seen++; seen == n {
				panic(crash{p})
			}
		}
	}
}

// TestDirectCrashAtEveryStep_P11 kills a two-task write request at every
// step of its life (as SIGKILL would: nothing after the point runs). Right
// after the crash a request whose worker may live still holds its
// reservation (a new write request is refused); then reconcile, abort or
// the observer settles it from its records, replaying no prompt, and in
// the end: the request ended, nothing of it reserved, every commit its
// workers made still there, and a new write request admitted.
func TestDirectCrashAtEveryStep_P11(t *testing.T) {
	type step struct {
		point string
		n     int
	}
	steps := []step{{"direct:workspace-reserved", 1}, {"direct:recorded:0", 1}, {"direct:recorded:1", 1}, {"start:recorded", 1},
		{"direct:delivered", 1}, {"start:recorded", 2}, {"direct:delivered", 2},
		{"direct:reported:0", 1}, {"direct:reported:1", 1}, {"direct:released:0", 1}, {"direct:released:1", 1}}
	for _, s := range steps {
		t.Run(fmt.Sprintf("%s#%d", s.point, s.n), func(t *testing.T) {
			t.Parallel()
			d := newDirect(t, "req", changeTask("first"), changeTask("second"))
			fault := crashNth(s.point, s.n)
			crashed, err := run(func() error {
				if err := d.start(fault); err != nil {
					return err
				}
				for range 4 {
					st := d.status()
					if st.Phase != request.PhaseWorking {
						return nil
					}
					d.play("done")
					if err := d.observeWith(fault); err != nil {
						return err
					}
				}
				return fmt.Errorf("the request did not end: %+v", d.status())
			})
			if !crashed || err != nil {
				t.Fatalf("crash at %s: crashed=%v err=%v", s.point, crashed, err)
			}
			live := false
			if st, err := promote.ReadStatus(context.Background(), d.penv(nil), d.root, d.id); err == nil {
				for _, m := range st.Members {
					live = live || m.Phase == request.PhaseWorking
				}
			}
			intruder := d.other(fmt.Sprintf("intruder-%d", s.n), []string{"app"}, changeTask("x"))
			if live {
				if err := intruder.start(nil); err == nil {
					t.Fatalf("after a crash at %s a write request was admitted while the crashed one works", s.point)
				}
			}
			// Recovery as a person does it: reconcile, go on with the
			// worker if one is working, reconcile again.
			var nf *promote.NotFoundError
			if _, err := promote.ReconcileWorkspace(context.Background(), d.penv(nil), promote.RequestOptions{Root: d.root, ID: d.id}); errors.As(err, &nf) {
				// Nothing was recorded: nothing to settle.
			} else if err != nil {
				t.Fatalf("reconcile after %s: %v", s.point, err)
			} else if st := d.status(); st.Phase == request.PhaseAllocating || len(st.Missing) > 0 {
				// An interrupted allocation is never adopted; what it
				// reserved is released (checked below).
				if st.Worker != nil {
					t.Fatalf("after %s an allocation that never finished records a worker", s.point)
				}
			} else {
				st := d.drive()
				if st.Phase != request.PhaseDone && st.Phase != request.PhaseFailed {
					t.Fatalf("after %s the request ended %s", s.point, st.Phase)
				}
				if _, err := promote.ReconcileWorkspace(context.Background(), d.penv(nil), promote.RequestOptions{Root: d.root, ID: d.id}); err != nil {
					t.Fatal(err)
				}
				st = d.status()
				for name, m := range st.Members {
					if m.Reserved || m.Report == nil {
						t.Fatalf("after %s, %s: reserved %v, report %+v", s.point, name, m.Reserved, m.Report)
					}
				}
				// No task ran twice, and what ran is kept.
				log, _ := execGit(d.env, filepath.Join(d.root, "app"), "log", "--format=%s")
				for _, task := range []string{"first", "second"} {
					if strings.Count(log, "change "+task) > 1 {
						t.Fatalf("after %s task %s committed twice:\n%s", s.point, task, log)
					}
				}
				if st.Phase == request.PhaseDone && !strings.Contains(log, "change second") {
					t.Fatalf("after %s done without the second task's commit:\n%s", s.point, log)
				}
			}
			for _, name := range d.names {
				if got := d.reservation(name); got == d.id {
					t.Fatalf("after %s and recovery %s is still reserved", s.point, name)
				}
			}
			if err := intruder.start(nil); err != nil {
				t.Fatalf("after %s and recovery a new write request is refused: %v", s.point, err)
			}
		})
	}
}

func execGit(env []string, dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = env
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// TestDirectNeverShownEndedWhileItHoldsACheckout_P11: direct work cut short
// after it recorded its end but before it let its checkouts go is
// "releasing", not done: a new write request would still be refused for
// it. Reconcile lets the checkouts go, and then it is done.
func TestDirectNeverShownEndedWhileItHoldsACheckout_P11(t *testing.T) {
	d := newDirect(t, "req", changeTask("first"))
	crashed, err := run(func() error {
		if err := d.start(nil); err != nil {
			return err
		}
		d.play("done")
		return d.observeWith(crashNth("direct:reported:1", 1))
	})
	if !crashed || err != nil {
		t.Fatalf("crashed=%v err=%v", crashed, err)
	}
	st := d.status()
	for name, m := range st.Members {
		if m.Phase != request.PhaseDone || !m.Reserved {
			t.Fatalf("%s after the cut: phase %s, reserved %v; want done and still reserved", name, m.Phase, m.Reserved)
		}
	}
	if st.Phase != promote.PhaseReleasing {
		t.Fatalf("the request after the cut is %q; want %q while it holds its checkouts", st.Phase, promote.PhaseReleasing)
	}
	if _, err := promote.ReconcileWorkspace(context.Background(), d.penv(nil), promote.RequestOptions{Root: d.root, ID: d.id}); err != nil {
		t.Fatal(err)
	}
	if st := d.status(); st.Phase != request.PhaseDone {
		t.Fatalf("after reconcile the request is %q; want done", st.Phase)
	}
}
