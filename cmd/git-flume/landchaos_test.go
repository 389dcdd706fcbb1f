package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/git-flume/git-flume/land"
)

func init() {
	scriptCmds["landchaos"] = cmdLandChaos
}

// landchaos STEPS SEED: the lander's invariant under a randomized run
// (Q3, Q5, Q8). Two hosts, each a clone with its own places, land on one
// shared bare remote; steps at random commit to places and submit them,
// move the remote's main by hand, and run a host's lander, or both at
// once, some killed with SIGKILL after a random delay and some at a named
// point. The check fails for a place's .bad file and at random. After
// every step: every move of the remote's main (its reflog) is a hand
// commit or a candidate some entry's recorded proof names, with the tip
// it replaced and a passing check; no place's tip is merged into main
// twice; every submitted entry is there, and a landed one's candidate is
// on main. At the end, landers run without faults until nothing is
// queued: every entry is landed or returned.
func cmdLandChaos(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: landchaos STEPS SEED")
	}
	steps, err1 := strconv.Atoi(args[0])
	seed, err2 := strconv.ParseUint(args[1], 10, 64)
	if err1 != nil || err2 != nil {
		ts.Fatalf("usage: landchaos STEPS SEED")
	}
	c := newChaos(ts, seed)
	c.setUp()
	for i := 0; i < steps; i++ {
		// No lander runs between steps: a claim on main's queue one
		// killed left holds another host off for one step at most
		// (Q11: 15 minutes from when that host first sees it).
		cmdClock(ts, false, []string{"16m"})
		what := c.step()
		if err := c.invariant(); err != nil {
			ts.Fatalf("step %d (%s): %v", i, what, err)
		}
	}
	c.quiesce()
	if err := c.invariant(); err != nil {
		ts.Fatalf("after the last runs: %v", err)
	}
	c.final()
}

type chaos struct {
	ts    *testscript.TestScript
	rnd   *rand.Rand
	work  string
	env   []string
	flume string
	hosts []*chaosHost
	hand  map[string]bool // commits pushed to main by hand
	// proofs are every passed proof recorded in any state of any entry,
	// by "base candidate".
	proofs map[string]bool
	seen   map[string]bool // state commits read
	stats  map[string]int
}

type chaosHost struct {
	name, dir string
	places    []string
	submitted map[string]bool
	n         map[string]int // commits made in each place
}

func newChaos(ts *testscript.TestScript, seed uint64) *chaos {
	c := &chaos{ts: ts, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), work: ts.Getenv("WORK"),
		hand: map[string]bool{}, proofs: map[string]bool{}, seen: map[string]bool{}, stats: map[string]int{}}
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
		"GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_COUNT", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
		"GIT_COMMITTER_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT", "GIT_EDITOR", "LC_ALL", "TZ",
		"FLUME_NOW", "FLUME_PANE", "FLUME_TMUX_SOCKET", "FLUME_TEST_CLOCK", "GOCOVERDIR"} {
		if v := ts.Getenv(k); v != "" {
			c.env = append(c.env, k+"="+v)
		}
	}
	for i := 0; i < 5; i++ {
		k := strconv.Itoa(i)
		c.env = append(c.env, "GIT_CONFIG_KEY_"+k+"="+ts.Getenv("GIT_CONFIG_KEY_"+k), "GIT_CONFIG_VALUE_"+k+"="+ts.Getenv("GIT_CONFIG_VALUE_"+k))
	}
	var err error
	if c.flume, err = exec.LookPath("git-flume"); err != nil {
		// testscript puts its commands on the script's PATH, not ours.
		for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
			if p := filepath.Join(dir, "git-flume"); fileExists(p) {
				c.flume = p
				break
			}
		}
	}
	if c.flume == "" {
		ts.Fatalf("no git-flume on the script's PATH")
	}
	return c
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// run runs a command to its end and returns its output; a failure is
// the caller's to judge.
func (c *chaos) run(dir string, extra []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, append(slices.Clone(c.env), extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *chaos) must(dir string, extra []string, name string, args ...string) string {
	out, err := c.run(dir, extra, name, args...)
	if err != nil {
		c.ts.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
	return out
}

const chaosCheck = `# a place's .bad file fails the check, and one run in seven fails at random;
# while both hosts land at once, each check takes a while, so that the
# second lander finds the first one holding main's queue; while main is
# moved during a land, the check says it has started and waits for the move
[ -f "$HOME/slow" ] && sleep 0.15
if [ -f "$HOME/hold" ]; then
	: > "$HOME/signal/checking"
	n=0
	while [ ! -f "$HOME/signal/moved" ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n+1)); done
fi
if git ls-files | grep -q '\.bad$'; then echo "found a bad file"; exit 1; fi
if [ ! -f "$HOME/steady" ] && [ "$(od -An -N1 -tu1 /dev/urandom | tr -d ' ')" -lt 36 ]; then echo "flaked"; exit 1; fi
echo ok
`

func (c *chaos) setUp() {
	w := c.work
	c.must(w, nil, "git", "init", "-q", "--bare", "remote.git")
	c.must(w, nil, "git", "-C", "remote.git", "config", "core.logAllRefUpdates", "always")
	c.must(w, nil, "git", "clone", "-q", "remote.git", "seed")
	seed := filepath.Join(w, "seed")
	if err := os.MkdirAll(filepath.Join(seed, ".flume"), 0o755); err != nil {
		c.ts.Fatalf("%v", err)
	}
	writeFile(c.ts, filepath.Join(seed, ".flume", "config"), "[land]\n\tcheck = sh check.sh\n\tremote = origin\n\tbatch = 4\n\tcache = ~/signal\n")
	writeFile(c.ts, filepath.Join(seed, "check.sh"), chaosCheck)
	c.must(seed, nil, "git", "add", ".")
	c.must(seed, nil, "git", "commit", "-q", "-m", "init")
	c.must(seed, nil, "git", "push", "-q", "origin", "main")
	c.must(w, nil, "git", "clone", "-q", "remote.git", "hand")
	for _, name := range []string{"a", "b"} {
		c.must(w, nil, "git", "clone", "-q", "remote.git", name)
		h := &chaosHost{name: "host" + strings.ToUpper(name), dir: filepath.Join(w, name), submitted: map[string]bool{}, n: map[string]int{}}
		for i := 1; i <= 6; i++ {
			id := fmt.Sprintf("fix--%s%d", name, i)
			c.must(h.dir, h.vars(), c.flume, "launch", "--kind", "fix", "--name", strings.TrimPrefix(id, "fix--"), "--brief", id)
			h.places = append(h.places, id)
		}
		c.hosts = append(c.hosts, h)
	}
}

func writeFile(ts *testscript.TestScript, path, text string) {
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		ts.Fatalf("%v", err)
	}
}

func (h *chaosHost) vars() []string { return []string{"FLUME_HOST=" + h.name} }

// step takes one random step and says what it was.
func (c *chaos) step() string {
	h := c.hosts[c.rnd.IntN(len(c.hosts))]
	switch r := c.rnd.IntN(100); {
	case r < 35:
		return c.work1(h)
	case r < 43:
		return c.moveByHand()
	case r < 80:
		return c.land(h)
	case r < 90:
		return c.landWhileMoved(h)
	default:
		return c.landBoth()
	}
}

// work1 commits to one of h's places, now and then a .bad file or the
// removal of one, and submits it.
func (c *chaos) work1(h *chaosHost) string {
	id := h.places[c.rnd.IntN(len(h.places))]
	dir := filepath.Join(h.dir, "places", id)
	h.n[id]++
	file := fmt.Sprintf("%s-%d.txt", id, h.n[id])
	bad := filepath.Join(dir, id+".bad")
	switch {
	case fileExists(bad):
		c.must(dir, nil, "git", "rm", "-q", id+".bad")
	case c.rnd.IntN(5) == 0:
		file = id + ".bad"
		fallthrough
	default:
		writeFile(c.ts, filepath.Join(dir, file), file+"\n")
		c.must(dir, nil, "git", "add", file)
	}
	c.must(dir, nil, "git", "commit", "-q", "-m", "work "+file)
	c.must(h.dir, h.vars(), c.flume, "submit", id)
	h.submitted[id] = true
	c.stats["submits"]++
	return h.name + " submits " + id
}

// moveByHand pushes a commit to the remote's main from another clone.
func (c *chaos) moveByHand() string {
	hand := filepath.Join(c.work, "hand")
	c.must(hand, nil, "git", "fetch", "-q", "origin")
	c.must(hand, nil, "git", "reset", "-q", "--hard", "origin/main")
	c.must(hand, nil, "git", "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("by hand %d", len(c.hand)))
	if out, err := c.run(hand, nil, "git", "push", "-q", "origin", "main"); err != nil {
		return "a push by hand refused: " + strings.TrimSpace(out)
	}
	c.hand[strings.TrimSpace(c.must(hand, nil, "git", "rev-parse", "HEAD"))] = true
	c.stats["hand"]++
	return "main moved by hand"
}

var chaosFaults = []string{"land:candidate", "land:proven", "land:intent", "land:pushed"}

// land runs h's lander: to its end, killed at a named point, or killed
// with SIGKILL after a random delay.
func (c *chaos) land(h *chaosHost) string {
	vars := h.vars()
	what := h.name + " lands"
	switch c.rnd.IntN(10) {
	case 0, 1, 2:
		p := chaosFaults[c.rnd.IntN(len(chaosFaults))]
		vars = append(vars, "FLUME_FAULT="+p)
		what += ", killed at " + p
		c.stats["faults"]++
	case 3, 4, 5:
		d := time.Duration(c.rnd.IntN(400)) * time.Millisecond
		what += fmt.Sprintf(", killed after %v", d)
		c.stats["kills"]++
		c.landKilled(h, vars, d)
		return what
	}
	out, _ := c.run(h.dir, vars, c.flume, "land")
	c.count(out)
	return what
}

func (c *chaos) landKilled(h *chaosHost, vars []string, after time.Duration) {
	cmd, out := c.startLand(h, vars)
	t := time.AfterFunc(after, func() { _ = cmd.Process.Kill() })
	_ = cmd.Wait()
	t.Stop()
	c.count(out.String())
}

// slowChecks makes each check run take a while (chaosCheck) until the
// func it returns is called.
func (c *chaos) slowChecks() func() {
	slow := filepath.Join(c.ts.Getenv("HOME"), "slow")
	writeFile(c.ts, slow, "")
	return func() { _ = os.Remove(slow) }
}

// startLand starts h's lander with vars and does not wait for it; its
// output goes to the buffer returned.
func (c *chaos) startLand(h *chaosHost, vars []string) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(c.flume, "land")
	cmd.Dir, cmd.Env = h.dir, append(slices.Clone(c.env), vars...)
	out := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		c.ts.Fatalf("start land: %v", err)
	}
	return cmd, out
}

// landWhileMoved submits work on h, runs h's lander and moves main by
// hand while its first check runs: the check says it has started
// (chaosCheck) and waits for the move, so the proof it gives names a
// tip main has left, however loaded the machine.
func (c *chaos) landWhileMoved(h *chaosHost) string {
	c.work1(h)
	home := c.ts.Getenv("HOME")
	checking, moved := filepath.Join(home, "signal", "checking"), filepath.Join(home, "signal", "moved")
	for _, p := range []string{checking, moved} {
		_ = os.Remove(p)
	}
	// The lander makes its cache folder only once it checks; one another
	// host's killed lander holds off (Q11: 15 minutes from when this host
	// first sees its claim) never does.
	if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
		c.ts.Fatalf("%v", err)
	}
	hold := filepath.Join(home, "hold")
	writeFile(c.ts, hold, "")
	defer func() {
		for _, p := range []string{hold, checking, moved} {
			_ = os.Remove(p)
		}
	}()
	cmd, out := c.startLand(h, h.vars())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	waited := "before its check"
wait:
	for deadline := time.After(30 * time.Second); ; {
		if fileExists(checking) {
			waited = "during its check"
			break
		}
		select {
		case <-done:
			break wait
		case <-deadline:
			break wait
		case <-time.After(10 * time.Millisecond):
		}
	}
	what := c.moveByHand()
	writeFile(c.ts, moved, "")
	<-done
	c.count(out.String())
	return h.name + " lands, and " + what + " " + waited
}

// landBoth submits work on both hosts and runs both hosts' landers at
// once: the second starts once the first holds main's queue (or has
// ended), and either gives up at once or, now and then, waits for the
// first to let go.
func (c *chaos) landBoth() string {
	first, second := c.hosts[0], c.hosts[1]
	if c.rnd.IntN(2) == 0 {
		first, second = second, first
	}
	// Both have work queued: each lander has a queue to hold.
	c.work1(first)
	c.work1(second)
	defer c.slowChecks()()
	cmd, out := c.startLand(first, first.vars())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	remote := filepath.Join(c.work, "remote.git")
	for i := 0; i < 200; i++ {
		if held, _ := c.run(remote, nil, "git", "for-each-ref", "refs/flume-land-claims/"); held != "" {
			break
		}
		select {
		case <-done:
			i = 200
		case <-time.After(10 * time.Millisecond):
		}
	}
	args := []string{"land"}
	if c.rnd.IntN(3) == 0 {
		args = append(args, "--wait")
	}
	second2, _ := c.run(second.dir, second.vars(), c.flume, args...)
	<-done
	c.count(out.String())
	c.count(second2)
	c.stats["both"]++
	return fmt.Sprintf("%s lands, and %s %s meanwhile", first.name, second.name, strings.Join(args, " "))
}

func (c *chaos) count(out string) {
	c.stats["landed"] += strings.Count(out, ": landed on ")
	c.stats["returned"] += strings.Count(out, ": returned: ")
	c.stats["voided"] += strings.Count(out, ": proof void")
	c.stats["held off"] += strings.Count(out, "'s lander holds its queue") + strings.Count(out, "another lander took its queue first")
}

// invariant checks what must hold after every step.
func (c *chaos) invariant() error {
	if err := c.readProofs(); err != nil {
		return err
	}
	remote := filepath.Join(c.work, "remote.git")
	f, err := os.Open(filepath.Join(remote, "logs", "refs", "heads", "main"))
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for first := true; sc.Scan(); first = false {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			return fmt.Errorf("reflog line %q", sc.Text())
		}
		old, new := fields[0], fields[1]
		if first || c.hand[new] || c.proofs[old+" "+new] {
			continue
		}
		return fmt.Errorf("main moved from %.12s to %.12s: neither a hand commit nor a candidate a recorded passed proof names from that tip", old, new)
	}
	// No tip merged twice: the second parents of main's first-parent line.
	lines := strings.Split(strings.TrimSpace(c.must(remote, nil, "git", "rev-list", "--first-parent", "--parents", "main")), "\n")
	merged := map[string]bool{}
	for _, l := range lines {
		ps := strings.Fields(l)
		if len(ps) < 3 {
			continue
		}
		if merged[ps[2]] {
			return fmt.Errorf("tip %.12s merged into main twice", ps[2])
		}
		merged[ps[2]] = true
	}
	return c.entriesKept(remote)
}

// entriesKept: every submitted place has its entry, and a landed entry's
// candidate is on the remote's main.
func (c *chaos) entriesKept(remote string) error {
	main := strings.TrimSpace(c.must(remote, nil, "git", "rev-parse", "main"))
	for _, h := range c.hosts {
		for id := range h.submitted {
			e, err := c.entry(h, id)
			if err != nil {
				return err
			}
			if e.State != land.Landed {
				continue
			}
			if _, err := c.run(remote, nil, "git", "merge-base", "--is-ancestor", e.Proof.Candidate, main); err != nil {
				return fmt.Errorf("%s of %s is landed at %.12s, which is not on main", id, h.name, e.Proof.Candidate)
			}
		}
	}
	return nil
}

func (c *chaos) entry(h *chaosHost, id string) (*land.Entry, error) {
	out, err := c.run(h.dir, nil, "git", "cat-file", "blob", land.Ref(id)+":state.json")
	if err != nil {
		return nil, fmt.Errorf("%s of %s: its entry is lost: %s", id, h.name, out)
	}
	var e land.Entry
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		return nil, fmt.Errorf("%s of %s: %v", id, h.name, err)
	}
	return &e, nil
}

// readProofs reads every state of every entry on both hosts not read
// yet, and keeps each passed proof.
func (c *chaos) readProofs() error {
	for _, h := range c.hosts {
		refs := strings.Fields(c.must(h.dir, nil, "git", "for-each-ref", "--format=%(refname)", land.Prefix))
		for _, ref := range refs {
			for _, commit := range strings.Fields(c.must(h.dir, nil, "git", "log", "--format=%H", ref)) {
				if c.seen[commit] {
					continue
				}
				c.seen[commit] = true
				var e land.Entry
				if out, err := c.run(h.dir, nil, "git", "cat-file", "blob", commit+":state.json"); err != nil || json.Unmarshal([]byte(out), &e) != nil {
					continue
				}
				if e.State == land.Landing {
					c.stats["landing states"]++
				}
				if p := e.Proof; p != nil && p.Passed && len(p.Checks) > 0 && p.Checks[len(p.Checks)-1].Exit == 0 {
					c.proofs[p.Base+" "+p.Candidate] = true
				}
			}
		}
	}
	return nil
}

// quiesce runs both landers without faults and with a steady check until
// nothing is queued or landing, and then every entry must be landed or
// returned.
func (c *chaos) quiesce() {
	writeFile(c.ts, filepath.Join(c.ts.Getenv("HOME"), "steady"), "")
	for round := 0; round < 10; round++ {
		cmdClock(c.ts, false, []string{"16m"})
		busy := false
		for _, h := range c.hosts {
			out, _ := c.run(h.dir, h.vars(), c.flume, "land")
			c.count(out)
			for id := range h.submitted {
				e, err := c.entry(h, id)
				if err != nil {
					c.ts.Fatalf("%v", err)
				}
				busy = busy || e.State == land.Queued || e.State == land.Landing
			}
		}
		if !busy {
			return
		}
	}
	c.ts.Fatalf("entries still queued after ten quiet runs of both landers")
}

// final checks the run did what it was for, and logs its figures.
func (c *chaos) final() {
	main := strings.TrimSpace(c.must(filepath.Join(c.work, "remote.git"), nil, "git", "rev-parse", "main"))
	for _, h := range c.hosts {
		for id := range h.submitted {
			e, _ := c.entry(h, id)
			switch e.State {
			case land.Landed, land.Returned:
			default:
				c.ts.Fatalf("%s of %s ends %s", id, h.name, e.State)
			}
			if _, err := c.run(filepath.Join(c.work, "remote.git"), nil, "git", "merge-base", "--is-ancestor", e.Tip, main); e.State == land.Landed && err != nil {
				js, _ := json.Marshal(e)
				c.ts.Fatalf("%s of %s: landed, and its tip %.12s is not on main\n%s\n%s", id, h.name, e.Tip, js,
					c.must(filepath.Join(c.work, "remote.git"), nil, "git", "log", "--format=%h %p %s", "-n", "30", "main"))
			}
		}
	}
	c.ts.Logf("landchaos: %v", c.stats)
	for _, k := range []string{"landed", "returned", "voided", "kills", "faults", "hand", "both", "landing states", "held off"} {
		if c.stats[k] == 0 {
			c.ts.Fatalf("the run never saw %q: it proves less than it claims (%v)", k, c.stats)
		}
	}
}
