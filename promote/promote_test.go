package promote_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/promote"
	"github.com/git-flume/git-flume/promote/request"
	"github.com/git-flume/git-flume/refs"
)

type workspace struct {
	t       *testing.T
	root    string
	env     []string
	targets []promote.Target
}

func (w *workspace) git(dir string, args ...string) string {
	w.t.Helper()
	return gitIn(w.t, w.env, dir, args...)
}

// gitIn runs raw git in dir for fixtures and checks, outside the code
// under test.
func gitIn(t testing.TB, env []string, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// newWorkspace makes n repositories, each with main checked out at a base
// commit and a checked tip one commit ahead on another branch.
func newWorkspace(t *testing.T, n int) *workspace {
	return makeWorkspace(t, t.TempDir(), n)
}

func makeWorkspace(t *testing.T, root string, n int) *workspace {
	home := filepath.Join(root, ".home")
	os.MkdirAll(home, 0o755)
	w := &workspace{t: t, env: []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + filepath.Join(home, ".gitconfig"),
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com",
	}}
	for i := range n {
		name := fmt.Sprintf("r%d", i)
		dir := filepath.Join(root, name)
		w.git(root, "init", "-q", "-b", "main", dir)
		os.WriteFile(filepath.Join(dir, "base.txt"), []byte("base\n"), 0o644)
		w.git(dir, "add", ".")
		w.git(dir, "commit", "-q", "-m", "base")
		base := w.git(dir, "rev-parse", "HEAD")
		w.git(dir, "checkout", "-q", "-b", "checked")
		os.WriteFile(filepath.Join(dir, "tip.txt"), []byte("tip "+name+"\n"), 0o644)
		w.git(dir, "add", ".")
		w.git(dir, "commit", "-q", "-m", "checked change")
		tip := w.git(dir, "rev-parse", "HEAD")
		w.git(dir, "checkout", "-q", "main")
		w.targets = append(w.targets, promote.Target{Name: name, Repo: dir, Branch: "main", Base: base, Tip: tip})
	}
	w.root = root
	return w
}

// clone copies the workspace (plain files: repositories and all) for a
// test of its own, which is much cheaper than making it again.
func (w *workspace) clone(t *testing.T) *workspace {
	root := filepath.Join(t.TempDir(), "ws")
	if err := os.CopyFS(root, os.DirFS(w.root)); err != nil {
		t.Fatal(err)
	}
	c := &workspace{t: t, root: root}
	for _, kv := range w.env {
		c.env = append(c.env, strings.Replace(kv, w.root, root, 1))
	}
	for _, tg := range w.targets {
		tg.Repo = filepath.Join(root, filepath.Base(tg.Repo))
		c.targets = append(c.targets, tg)
	}
	return c
}

func (w *workspace) env_(fault func(string)) *promote.Env {
	return &promote.Env{Runner: &git.Runner{Env: w.env}, Kinds: testKinds, Now: time.Now, Fault: fault}
}

func (w *workspace) mainAt(i int) string { return w.git(w.targets[i].Repo, "rev-parse", "main") }

func (w *workspace) state(i int) string {
	out, err := exec.Command("git", "-C", w.targets[i].Repo, "show", promote.RecordRef("req")+":state.json").Output()
	if err != nil {
		return ""
	}
	var s string
	if j := strings.Index(string(out), `"state":"`); j >= 0 {
		s = string(out)[j+9:]
		s = s[:strings.IndexByte(s, '"')]
	}
	return s
}

// flumeMoves counts main's reflog entries written by promotion.
func (w *workspace) flumeMoves(i int) int {
	return strings.Count(w.git(w.targets[i].Repo, "reflog", "show", "--format=%gs", "main"), "flume promote req")
}

// settled checks a finished promotion: every main at its tip, its work
// tree there too and clean, one receipt and exactly one flume move each.
func (w *workspace) settled() {
	w.t.Helper()
	for i, tg := range w.targets {
		if at := w.mainAt(i); at != tg.Tip {
			w.t.Fatalf("%s: main at %s, want tip %s", tg.Name, at, tg.Tip)
		}
		if st := w.state(i); st != promote.Promoted {
			w.t.Fatalf("%s: state %q, want promoted", tg.Name, st)
		}
		if n := w.flumeMoves(i); n != 1 {
			w.t.Fatalf("%s: %d flume moves in main's reflog, want exactly 1", tg.Name, n)
		}
		if s := w.git(tg.Repo, "status", "--porcelain"); s != "" {
			w.t.Fatalf("%s: work tree not clean after promotion:\n%s", tg.Name, s)
		}
		if _, err := os.Stat(filepath.Join(tg.Repo, "tip.txt")); err != nil {
			w.t.Fatalf("%s: work tree not at the tip: %v", tg.Name, err)
		}
	}
}

func TestPromoteMovesEveryMainSerially_P6(t *testing.T) {
	for _, n := range []int{1, 2, 3, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			w := newWorkspace(t, n)
			if err := promote.Promote(context.Background(), w.env_(nil), "req", w.targets); err != nil {
				t.Fatal(err)
			}
			w.settled()
			// P7: promoting again repeats nothing.
			if err := promote.Promote(context.Background(), w.env_(nil), "req", w.targets); err != nil {
				t.Fatal(err)
			}
			w.settled()
		})
	}
}

type crash struct{ point string }

// crashAt stops the promotion at point as a SIGKILL would: nothing after
// it runs.
func crashAt(point string) func(string) {
	return func(p string) {
		if p == point {
			panic(crash{p})
		}
	}
}

// tornAt crashes at point like crashAt, except "torn-move:<i>": it crashes
// where member i's move transaction would run and first leaves that
// member's repository (member(i)) as a crash inside git's commit of the
// transaction can: the intent record written, the branch not moved. git
// commits a transaction's refs in the order given, the record first; the
// state is made here with plain git, from the record as it was.
func tornAt(t testing.TB, env []string, member func(int) string, point string) func(string) {
	var i int
	if _, err := fmt.Sscanf(point, "torn-move:%d", &i); err != nil {
		return crashAt(point)
	}
	return func(p string) {
		if p != fmt.Sprintf("before-move:%d", i) {
			return
		}
		repo, ref := member(i), promote.RecordRef("req")
		git := func(stdin string, args ...string) string {
			cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
			cmd.Env = env
			cmd.Stdin = strings.NewReader(stdin)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("git %v: %v", args, err)
			}
			return strings.TrimSpace(string(out))
		}
		old := git("", "rev-parse", ref)
		var rec map[string]any
		if err := json.Unmarshal([]byte(git("", "cat-file", "blob", old+":state.json")), &rec); err != nil {
			t.Fatal(err)
		}
		rec["state"] = promote.Intent
		data, _ := json.Marshal(rec)
		blob := git(string(data), "hash-object", "-w", "--stdin")
		tree := git("100644 blob "+blob+"\tstate.json\n", "mktree")
		commit := git("", "commit-tree", tree, "-p", old, "-m", "intent (torn move)")
		git("", "update-ref", ref, commit, old)
		panic(crash{point})
	}
}

func run(f func() error) (crashed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crash); !ok {
				panic(r)
			}
			crashed = true
		}
	}()
	return false, f()
}

// invariants hold at any moment: every main at its base or its tip, and a
// member moved only once every member before it has its receipt.
func (w *workspace) invariants(when string) {
	w.t.Helper()
	for k, tg := range w.targets {
		at := w.mainAt(k)
		if at != tg.Base && at != tg.Tip {
			w.t.Fatalf("%s: %s: main at %s, neither base nor tip", when, tg.Name, at)
		}
		if at == tg.Tip {
			for j := 0; j < k; j++ {
				if st := w.state(j); st != promote.Promoted {
					w.t.Fatalf("%s: %s moved while %s had no receipt (state %q)", when, tg.Name, w.targets[j].Name, st)
				}
			}
		}
	}
}

func TestCrashAtEveryStep_P6_P7(t *testing.T) {
	if testing.Short() {
		t.Skip("many workspaces")
	}
	ctx := context.Background()
	for _, n := range []int{1, 2, 3, 8} {
		template := makeWorkspace(t, filepath.Join(t.TempDir(), "template"), n)
		var points []string
		for _, i := range crashMembers(n) {
			for _, p := range []string{"before-move", "torn-move", "after-move", "after-switch", "after-receipt"} {
				points = append(points, fmt.Sprintf("%s:%d", p, i))
			}
		}
		for _, point := range points {
			t.Run(fmt.Sprintf("%d/%s", n, point), func(t *testing.T) {
				t.Parallel()
				w := template.clone(t)
				member := func(i int) string { return w.targets[i].Repo }
				crashed, err := run(func() error { return promote.Promote(ctx, w.env_(tornAt(t, w.env, member, point)), "req", w.targets) })
				if !crashed || err != nil {
					t.Fatalf("crash at %s: crashed=%v err=%v", point, crashed, err)
				}
				w.invariants("after the crash")
				if point == "before-move:0" || point == "torn-move:0" {
					for k := range w.targets {
						if w.mainAt(k) != w.targets[k].Base {
							t.Fatalf("a crash before the first move moved %s", w.targets[k].Name)
						}
					}
				}
				// A second crash, inside reconcile, at the member that was
				// moving; then reconcile and continue.
				var i int
				fmt.Sscanf(point[strings.IndexByte(point, ':')+1:], "%d", &i)
				if _, err := run(func() error {
					_, err := promote.Reconcile(ctx, w.env_(crashAt(fmt.Sprintf("reconcile:%d", i))), "req", w.targets)
					return err
				}); err != nil {
					t.Fatalf("reconcile (crashed): %v", err)
				}
				w.invariants("after a crashed reconcile")
				if _, err := promote.Reconcile(ctx, w.env_(nil), "req", w.targets); err != nil {
					t.Fatalf("reconcile: %v", err)
				}
				w.invariants("after reconcile")
				// A crash during the continued promotion too, one member on.
				if i+1 < n {
					run(func() error {
						return promote.Promote(ctx, w.env_(crashAt(fmt.Sprintf("after-move:%d", i+1))), "req", w.targets)
					})
					w.invariants("after a crashed continue")
					if _, err := promote.Reconcile(ctx, w.env_(nil), "req", w.targets); err != nil {
						t.Fatalf("reconcile: %v", err)
					}
				}
				if err := promote.Promote(ctx, w.env_(nil), "req", w.targets); err != nil {
					t.Fatalf("continue: %v", err)
				}
				w.settled()
			})
		}
	}
}

func TestInterferenceNeverMakesAWrongMove_P6_P7(t *testing.T) {
	ctx := context.Background()
	var refused *promote.RefusedError

	t.Run("main moved by someone else before the next move", func(t *testing.T) {
		w := newWorkspace(t, 3)
		other := w.targets[2]
		moved := false
		fault := func(p string) {
			if p == "after-receipt:0" && !moved {
				moved = true
				os.WriteFile(filepath.Join(other.Repo, "theirs.txt"), []byte("x"), 0o644)
				w.git(other.Repo, "add", ".")
				w.git(other.Repo, "commit", "-q", "-m", "someone else")
			}
		}
		err := promote.Promote(ctx, w.env_(fault), "req", w.targets)
		if !errors.As(err, &refused) || refused.Member != "r2" {
			t.Fatalf("got %v, want a refusal naming r2", err)
		}
		if w.mainAt(1) != w.targets[1].Base || w.state(0) != promote.Promoted {
			t.Fatal("r1 moved after r2 changed, or r0 lost its receipt")
		}
	})

	t.Run("checkout dirtied while the member before saves its receipt", func(t *testing.T) {
		// The next mover's checkout is read after the move before it, while
		// that receipt is saved: a change made in the moment between is
		// never lost, whether it stops the move or comes along.
		w := newWorkspace(t, 2)
		file := filepath.Join(w.targets[1].Repo, "base.txt")
		fault := func(p string) {
			if p == "after-receipt:0" {
				os.WriteFile(file, []byte("mine\n"), 0o644)
			}
		}
		err := promote.Promote(ctx, w.env_(fault), "req", w.targets)
		if data, _ := os.ReadFile(file); string(data) != "mine\n" {
			t.Fatalf("the change was lost (promote: %v)", err)
		}
		if at := w.mainAt(1); at != w.targets[1].Base && at != w.targets[1].Tip {
			t.Fatalf("r1 at %.12s, neither base nor tip", at)
		}
	})

	t.Run("dirty main checkout", func(t *testing.T) {
		w := newWorkspace(t, 2)
		os.WriteFile(filepath.Join(w.targets[1].Repo, "base.txt"), []byte("mine\n"), 0o644)
		err := promote.Promote(ctx, w.env_(nil), "req", w.targets)
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), "kept and block promotion") {
			t.Fatalf("got %v", err)
		}
		if w.mainAt(0) != w.targets[0].Base {
			t.Fatal("a dirty member elsewhere did not stop the promotion before it began")
		}
		if data, _ := os.ReadFile(filepath.Join(w.targets[1].Repo, "base.txt")); string(data) != "mine\n" {
			t.Fatal("the dirty file was not preserved")
		}
	})

	t.Run("stale main.lock", func(t *testing.T) {
		w := newWorkspace(t, 2)
		lock := filepath.Join(w.targets[0].Repo, ".git", "refs", "heads", "main.lock")
		os.WriteFile(lock, nil, 0o644)
		err := promote.Promote(ctx, w.env_(nil), "req", w.targets)
		if err == nil || !errors.Is(err, git.ErrLocked) {
			t.Fatalf("got %v, want a held lock", err)
		}
		outs, err := promote.Reconcile(ctx, w.env_(nil), "req", w.targets)
		if err != nil || outs[0].State != promote.Pending {
			t.Fatalf("reconcile: %v %+v", err, outs)
		}
		os.Remove(lock)
		if err := promote.Promote(ctx, w.env_(nil), "req", w.targets); err != nil {
			t.Fatal(err)
		}
		w.settled()
	})

	t.Run("deleted receipt", func(t *testing.T) {
		w := newWorkspace(t, 2)
		if err := promote.Promote(ctx, w.env_(nil), "req", w.targets); err != nil {
			t.Fatal(err)
		}
		w.git(w.targets[0].Repo, "update-ref", "-d", promote.RecordRef("req"))
		err := promote.Promote(ctx, w.env_(nil), "req", w.targets)
		if !errors.As(err, &refused) || refused.Member != "r0" {
			t.Fatalf("got %v, want r0 refused (at its tip with no receipt)", err)
		}
		if w.flumeMoves(0) != 1 || w.flumeMoves(1) != 1 {
			t.Fatal("a move was repeated")
		}
	})

	t.Run("moved elsewhere during an interrupted move", func(t *testing.T) {
		w := newWorkspace(t, 1)
		member := func(i int) string { return w.targets[i].Repo }
		run(func() error {
			return promote.Promote(ctx, w.env_(tornAt(t, w.env, member, "torn-move:0")), "req", w.targets)
		})
		w.git(w.targets[0].Repo, "commit", "-q", "--allow-empty", "-m", "someone else")
		outs, err := promote.Reconcile(ctx, w.env_(nil), "req", w.targets)
		if err != nil || outs[0].State != promote.Manual || !strings.Contains(outs[0].Reason, "neither its base") {
			t.Fatalf("reconcile: %v %+v", err, outs)
		}
		if err := promote.Promote(ctx, w.env_(nil), "req", w.targets); !errors.As(err, &refused) {
			t.Fatalf("promote after manual: %v", err)
		}
	})

	t.Run("tip that does not descend from the base", func(t *testing.T) {
		w := newWorkspace(t, 1)
		w.targets[0].Tip = w.git(w.targets[0].Repo, "commit-tree", "-m", "unrelated", w.git(w.targets[0].Repo, "rev-parse", "HEAD^{tree}"))
		err := promote.Promote(ctx, w.env_(nil), "req", w.targets)
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), "never a re-merge") {
			t.Fatalf("got %v", err)
		}
	})
}

// crashMembers are the members a crash matrix of n repositories crashes
// at: every one in CI (FLUME_FULL_MATRIX=1, which `make test` sets when
// CI is set), else the first, the second and the last, which cover a
// crash before any move, between moves and after the others moved.
func crashMembers(n int) []int {
	if n <= 3 || os.Getenv("FLUME_FULL_MATRIX") != "" {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all
	}
	return []int{0, 1, n - 1}
}

// testKinds are promote's record kinds, wired as git-flume wires them.
var testKinds = refs.Kinds{refs.ClaimKind, request.WorkspaceKind, request.ReservationKind}
