package runenv

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/lockfile"
	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// Places that can be run: a repository's [run] section names
// the ignored files each new place gets a copy of (its .env), the port
// variables each place gets ports of its own for, and the variables given
// a compose project name unique to the repository and place. A place's
// ports are a block leased per host by a create-only compare-and-swap ref
// under refs/flume/leases/<host>/, after a bind probe found them free;
// tidy releases it. Every repository step, the agent and `git flume env`
// get the variables.

// SetUpRun gives a made place what [run] declares: a lease of its ports
// (the one its record names already, when it has one), then copies of its
// env files and its dependency folders, and records them with the place.
// It does nothing for a repository that declares none. A setup that
// fails is recorded failed, with why, and the place keeps
// saying it lacks it until a later one finishes.
func SetUpRun(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, p *record.Place, d stage.RunDecl) (*refs.Record, error) {
	if !d.Declared() {
		return nil, nil
	}
	rec, err := setUpRun(ctx, env, repo, store, p, d)
	if err != nil {
		_, _ = record.EditPlace(ctx, store, p.ID, func(cur *record.Place) (string, error) {
			run := record.RunSetup{}
			if cur.Run != nil {
				run = *cur.Run
			}
			run.Unfinished, run.Failed = true, err.Error()
			cur.Run = &run
			*p = *cur
			return fmt.Sprintf("launch %s: run setup failed", p.ID), nil
		})
	}
	return rec, err
}

func setUpRun(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, p *record.Place, d stage.RunDecl) (*refs.Record, error) {
	files, err := copyEnvFiles(ctx, repo, p, d.Env)
	if err != nil {
		return nil, err
	}
	env.FaultAt("run:copied")
	deps, err := setUpDeps(ctx, env, repo, p, d)
	if err != nil {
		return nil, err
	}
	env.FaultAt("run:deps")
	setup := &record.RunSetup{Compose: d.Compose, Env: files, Deps: deps}
	fresh := false
	if len(d.Ports) > 0 {
		if p.Run != nil && p.Run.Lease != "" {
			setup.Lease, setup.Ports = p.Run.Lease, p.Run.Ports
		} else if setup.Lease, setup.Ports, err = leasePorts(ctx, env, repo, store, p, d); err != nil {
			return nil, err
		} else {
			fresh = true
		}
		env.FaultAt("run:leased")
	}
	rec, err := record.EditPlace(ctx, store, p.ID, func(cur *record.Place) (string, error) {
		cur.Run = setup
		*p = *cur
		return fmt.Sprintf("launch %s: run set up (%d ports, %d env files)", p.ID, len(setup.Ports), len(setup.Env)), nil
	})
	if err != nil && fresh {
		// The place does not name its lease: give the ports back now
		// (were this process killed instead, the next lease would take
		// them over, its launcher gone).
		q := *p
		q.Run = setup
		err = errors.Join(err, ReleaseLease(ctx, store, &q))
	}
	return rec, err
}

// Lacking says what place p lacks of what [run] promised it, "" for
// nothing: a setup unfinished or failed, or, set up, an env file it
// copied or a dependency folder it got that is gone (a worktree made
// again by hand).
func Lacking(p *record.Place) string {
	r := p.Run
	switch {
	case r == nil:
		return ""
	case r.Failed != "":
		return "its [run] setup failed: " + r.Failed
	case r.Unfinished:
		return "its [run] setup is unfinished"
	}
	for _, f := range r.Env {
		if _, err := os.Lstat(filepath.Join(p.Path, f.Path)); f.Skipped == "" && err != nil {
			return f.Path + " is gone from it"
		}
	}
	if r.Deps != nil {
		for _, f := range r.Deps.Folders {
			if _, err := os.Lstat(filepath.Join(p.Path, f)); err != nil {
				return f + " is gone from it"
			}
		}
	}
	return ""
}

// Finish sets place p up again when it lacks what [run] promised it
// (Lacking), by d, its repository's [run] at its base: before a stage's
// agent starts, and for env --refresh. A place of another host is left to
// its host. It returns the record as it then stands (rec when nothing
// was done).
func Finish(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, rec *refs.Record, p *record.Place, d stage.RunDecl) (*refs.Record, error) {
	if Lacking(p) == "" || p.Host != env.Host {
		return rec, nil
	}
	next, err := SetUpRun(ctx, env, repo, store, p, d)
	if err != nil {
		return nil, fmt.Errorf("%s: [run] could not be set up: %w", p.ID, err)
	}
	if next == nil {
		return rec, nil
	}
	return next, nil
}

// LeasePrefix holds each host's port leases: refs/flume/leases/<host>/<first port>.
const LeasePrefix = refs.Prefix + "leases/"

// Lease is a block of ports held for a place on a host (kind "lease").
type Lease struct {
	Schema int            `json:"schema"`
	Kind   string         `json:"kind"`
	Host   string         `json:"host"`
	Repo   string         `json:"repo"`
	Place  string         `json:"place"`
	First  int            `json:"first"`
	Count  int            `json:"count"`
	Ports  map[string]int `json:"ports"`
	PID    int            `json:"pid"`
	At     time.Time      `json:"at"`
}

// LeaseKind is the port lease record, runenv's kind.
var LeaseKind = refs.Kind{Name: "lease", Schema: 1, Validate: validateLease}

// validateLease checks a lease before anyone acts on it: its ref names its
// host and first port, its ports lie in its block.
func validateLease(ref string, data []byte) (any, error) {
	var l Lease
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, err
	}
	if err := refs.ValidateHost(l.Host); err != nil {
		return nil, fmt.Errorf("invalid lease: %w", err)
	}
	if ref != leaseRef(l.Host, l.First) || l.Count < 1 || l.First < 1024 || l.First+l.Count > stage.MaxPort+100 {
		return nil, fmt.Errorf("invalid lease: %s holds ports %d+%d of host %q", ref, l.First, l.Count, l.Host)
	}
	for name, port := range l.Ports {
		if !stage.IsVarName(name) || port < l.First || port >= l.First+l.Count {
			return nil, fmt.Errorf("invalid lease: %s=%d is outside its block", name, port)
		}
	}
	return &l, nil
}

func leaseRef(host string, first int) string { return LeasePrefix + host + "/" + strconv.Itoa(first) }

// leasePorts leases a block of ports for place p: under the host's lease
// lock, the first block from PortsFrom that no live lease of any
// repository on this host holds and whose every port a bind probe finds
// free is taken by a create-only ref (or over this repository's stale
// lease of it, by compare-and-swap).
func leasePorts(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, p *record.Place, d stage.RunDecl) (string, map[string]int, error) {
	dir := stateDir(env.CallerEnv)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	l, err := lockfile.Take(ctx, filepath.Join(dir, "leases.lock"))
	if err != nil {
		return "", nil, err
	}
	defer l.Unlock()
	taken, stale, err := hostLeases(ctx, env, store)
	if err != nil {
		return "", nil, err
	}
	n := len(d.Ports)
	from := cmp.Or(d.PortsFrom, stage.DefaultPortsFrom)
	for first := from; first+n <= stage.MaxPort; first += n {
		if overlaps(taken, first, n) || !portsFree(first, n) {
			continue
		}
		lease := Lease{Schema: 1, Kind: "lease", Host: env.Host, Repo: p.Repo, Place: p.ID, First: first, Count: n,
			Ports: map[string]int{}, PID: env.PID, At: env.NowUTC()}
		for i, name := range d.Ports {
			lease.Ports[name] = first + i
		}
		ch := refs.Change{Ref: leaseRef(env.Host, first), Old: stale[first], State: lease, Message: "lease ports for " + p.ID}
		if _, err := store.Write(ctx, []refs.Change{ch}); err != nil {
			var conflict *refs.ConflictError
			if errors.As(err, &conflict) || errors.Is(err, git.ErrLocked) {
				// Taken meanwhile, or its ref locked by a git a kill left
				// (the lock is named by fsck and status): another block.
				continue
			}
			return "", nil, err
		}
		return ch.Ref, lease.Ports, nil
	}
	return "", nil, fmt.Errorf("no block of %d free ports from %d to %d on this host", n, from, stage.MaxPort)
}

// hostLeases are the port blocks leased on this host: this repository's
// and those of every repository the host's index lists (leases are per
// host; ports are the machine's). A lease of this repository whose place
// is gone or tidied, or whose launch died before the place named it, is
// stale: returned apart, to be taken over by compare-and-swap. Another
// repository's leases are only read.
func hostLeases(ctx context.Context, env *stage.Env, store *refs.Store) (taken map[int]int, stale map[int]*refs.Record, err error) {
	taken, stale = map[int]int{}, map[int]*refs.Record{}
	mine, _, err := store.List(ctx, LeasePrefix+env.Host+"/")
	if err != nil {
		return nil, nil, err
	}
	for _, rec := range mine {
		var l Lease
		if rec.Decode(&l) != nil {
			continue
		}
		if leaseLive(ctx, env, store, &l) {
			taken[l.First] = l.Count
		} else {
			stale[l.First] = rec
		}
	}
	repos, _ := env.Runner.GlobalConfigAll(ctx, stage.RepositoryKey)
	for _, dir := range repos {
		r, err := env.Runner.Open(ctx, dir)
		if err != nil || r.CommonDir == store.Repo().CommonDir {
			continue
		}
		other := refs.New(r, env.Kinds)
		recs, _, err := other.List(ctx, LeasePrefix+env.Host+"/")
		if err != nil {
			continue
		}
		for _, rec := range recs {
			var l Lease
			if rec.Decode(&l) == nil && leaseLive(ctx, env, other, &l) {
				taken[l.First] = l.Count
			}
		}
	}
	return taken, stale, nil
}

// PortsLeased are the ports this host's live leases hold, in every
// repository its index lists: a port a forward from here must not take.
func PortsLeased(ctx context.Context, env *stage.Env, store *refs.Store) (map[int]bool, error) {
	taken, _, err := hostLeases(ctx, env, store)
	ports := map[int]bool{}
	for first, n := range taken {
		for p := first; p < first+n; p++ {
			ports[p] = true
		}
	}
	return ports, err
}

// leaseLive reports whether lease l still holds its ports: its place's
// record names it and is not tidied, or the process that took it still
// runs (its place may not name it yet; that process may be this one,
// making several places at once, as the MCP server does).
func leaseLive(ctx context.Context, env *stage.Env, store *refs.Store, l *Lease) bool {
	_, p, err := record.ReadPlace(ctx, store, l.Place)
	if err == nil && p.Phase != record.PhaseTidied && p.Run != nil && p.Run.Lease == leaseRef(l.Host, l.First) {
		return true
	}
	return refs.ProcessAlive(l.Host, l.PID, env.Host)
}

func overlaps(taken map[int]int, first, n int) bool {
	for f, c := range taken {
		if first < f+c && f < first+n {
			return true
		}
	}
	return false
}

// portsFree probes each port of the block: bound on every interface and on
// loopback, and let go at once.
func portsFree(first, n int) bool {
	for port := first; port < first+n; port++ {
		for _, addr := range []string{fmt.Sprintf(":%d", port), fmt.Sprintf("127.0.0.1:%d", port)} {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return false
			}
			_ = ln.Close() // a probe: the port was free
		}
	}
	return true
}

// ReleaseLease gives up a place's port lease, if it still holds it.
func ReleaseLease(ctx context.Context, store *refs.Store, p *record.Place) error {
	if p.Run == nil || p.Run.Lease == "" {
		return nil
	}
	rec, err := store.Read(ctx, p.Run.Lease)
	if errors.Is(err, refs.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var l Lease
	if err := rec.Decode(&l); err != nil || l.Place != p.ID {
		return err
	}
	_, err = store.Write(ctx, []refs.Change{rec.Deletion("release ports of " + p.ID)})
	return err
}

// stateDir is flume's per-user state folder: $XDG_STATE_HOME/flume, else
// ~/.local/state/flume.
func stateDir(environ []string) string {
	var home, state string
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "XDG_STATE_HOME="); ok {
			state = v
		} else if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if state == "" {
		state = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(state, "flume")
}

// copyEnvFiles copies the main checkout's files matching globs into the
// place, mode 0600. A file git tracks is never copied (the place has its
// own), nor one git does not ignore (a copy could be committed), nor one
// outside the main checkout, nor one the place would take through a
// symbolic link (its branch chose its folders): each is
// recorded with why it was skipped, and nothing is written outside the
// place.
func copyEnvFiles(ctx context.Context, repo *git.Repo, p *record.Place, globs []string) ([]record.EnvFile, error) {
	var files []record.EnvFile
	for _, rel := range envPaths(p.Repo, globs) {
		f := record.EnvFile{Path: rel}
		if strings.HasPrefix(rel, "..") {
			f.Skipped = "outside the main checkout"
		} else if link := linkIn(p.Path, rel); link != "" {
			f.Skipped = throughLink(link)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, nil
	}
	tmpDir := filepath.Join(repo.CommonDir, "flume", "tmp")
	if err := os.MkdirAll(tmpDir, 0o700); err != nil {
		return nil, err
	}
	root, err := placeRoot(p)
	if err != nil {
		return skipAll(files, err.Error()), nil
	}
	defer root.Close()
	tmp, err := openDir(tmpDir)
	if err != nil {
		return nil, err
	}
	defer tmp.Close()
	var rels []string
	for _, f := range files {
		if f.Skipped == "" {
			rels = append(rels, f.Path)
		}
	}
	skips := envSkips(ctx, repo, p, rels)
	for i := range files {
		f := &files[i]
		if f.Skipped != "" {
			continue
		}
		if f.Skipped = skips[f.Path]; f.Skipped == "" {
			if err := copyBeneath(filepath.Join(p.Repo, f.Path), root, tmp, f.Path); err != nil {
				f.Skipped = err.Error()
			}
		}
	}
	return files, nil
}

// envPaths are the main checkout's files (at repoDir) matching globs,
// relative, sorted, none of the places' folder. A glob that does not read
// matches nothing.
func envPaths(repoDir string, globs []string) []string {
	var paths []string
	for _, g := range globs {
		matches, _ := filepath.Glob(filepath.Join(repoDir, g))
		for _, m := range matches {
			rel, err := filepath.Rel(repoDir, m)
			if err == nil && rel != record.PlacesDir && !strings.HasPrefix(rel, record.PlacesDir+string(filepath.Separator)) && !slices.Contains(paths, rel) {
				paths = append(paths, rel)
			}
		}
	}
	sort.Strings(paths)
	return paths
}

// linkIn is the first folder on rel's way below the place at dir that is
// a symbolic link (or no folder), "" when there is none.
func linkIn(dir, rel string) string {
	at := dir
	parts := strings.Split(filepath.Dir(rel), string(filepath.Separator))
	for _, part := range parts {
		if part == "." {
			break
		}
		at = filepath.Join(at, part)
		info, err := os.Lstat(at)
		if errors.Is(err, fs.ErrNotExist) {
			return ""
		}
		if err != nil || !info.IsDir() {
			rel, _ := filepath.Rel(dir, at)
			return rel
		}
	}
	return ""
}

// placeRoot opens the place's folder, where git made it: neither it nor
// the places folder may be a symbolic link.
func placeRoot(p *record.Place) (*os.File, error) {
	if info, err := os.Lstat(filepath.Join(p.Repo, record.PlacesDir)); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("%s is a symbolic link or not a folder: nothing is written through it", record.PlacesDir)
	}
	return openDir(p.Path)
}

// skipAll marks every file not yet skipped as skipped for why.
func skipAll(files []record.EnvFile, why string) []record.EnvFile {
	for i := range files {
		if files[i].Skipped == "" {
			files[i].Skipped = why
		}
	}
	return files
}

// envSkips says why each env file of rels is not copied into place p ("" to
// copy it): tracked in the place, or not ignored by git in the main
// checkout, or git's own words when it cannot say. One git call each for
// all of them; the files one at a time when that call fails, so one bad
// path skips that file only.
func envSkips(ctx context.Context, repo *git.Repo, p *record.Place, rels []string) map[string]string {
	why := map[string]string{}
	if len(rels) == 0 {
		return why
	}
	tracked, terr := repo.Tracked(ctx, p.Path, rels)
	ignored, ierr := repo.Ignored(ctx, p.Repo, rels)
	if (terr != nil || ierr != nil) && len(rels) > 1 {
		for _, rel := range rels {
			maps.Copy(why, envSkips(ctx, repo, p, []string{rel}))
		}
		return why
	}
	for _, rel := range rels {
		switch {
		case terr != nil:
			why[rel] = "git cannot say whether the place tracks it: " + terr.Error()
		case tracked[rel]:
			why[rel] = "tracked in the place: it has its own"
		case ierr != nil:
			why[rel] = "git cannot say whether it is ignored: " + ierr.Error()
		case !ignored[rel]:
			why[rel] = "not ignored by git: a copy could be committed"
		default:
			why[rel] = ""
		}
	}
	return why
}

// EnvOptions name a place whose run variables `git flume env` prints, and
// whether its env files are copied again first.
type EnvOptions struct {
	stage.PlaceOptions
	Refresh bool
}

// PlaceEnv is a place's run variables (RunVars) and its env files; with
// Refresh, its env files are first copied again from the main checkout
// (an original that changed reaches the place) and the record says so.
func PlaceEnv(ctx context.Context, env *stage.Env, o EnvOptions) ([]string, []record.EnvFile, error) {
	repo, store, err := env.Open(ctx, o.Repo)
	if err != nil {
		return nil, nil, err
	}
	_, p, err := record.ReadPlace(ctx, store, o.Place)
	if err != nil {
		return nil, nil, err
	}
	if p.Run == nil {
		return nil, nil, &stage.RefusedError{Place: p.ID, Reason: "its repository declared no [run] section when it was launched; there is nothing to print"}
	}
	lacking := Lacking(p)
	if !o.Refresh {
		if p.Run.Unfinished {
			return nil, nil, &stage.RefusedError{Place: p.ID, Reason: lacking + ": git flume env --refresh " + p.ID + " sets it up"}
		}
		return record.RunVars(p), p.Run.Env, nil
	}
	if p.Host != env.Host {
		return nil, nil, &stage.RefusedError{Place: p.ID, Reason: "a place of host " + p.Host + ": only its own host copies its env files"}
	}
	if lacking != "" {
		cfg, err := stage.LoadConfig(ctx, env.Runner, repo, p.ConfigRev(), env.UserConfig)
		if err != nil {
			return nil, nil, err
		}
		if _, err := Finish(ctx, env, repo, store, nil, p, cfg.Run); err != nil {
			return nil, nil, err
		}
		return record.RunVars(p), p.Run.Env, nil
	}
	var globs []string
	for _, f := range p.Run.Env {
		globs = append(globs, f.Path)
	}
	files, err := copyEnvFiles(ctx, repo, p, globs)
	if err != nil {
		return nil, nil, err
	}
	if _, err := record.EditPlace(ctx, store, p.ID, func(cur *record.Place) (string, error) {
		if cur.Run == nil {
			return "", refs.ErrNoChange
		}
		run := *cur.Run
		run.Env = files
		cur.Run = &run
		*p = *cur
		return fmt.Sprintf("env %s: %d env files copied again", p.ID, len(files)), nil
	}); err != nil {
		return nil, nil, err
	}
	return record.RunVars(p), files, nil
}

// StopPlaceProcesses ends what a place started before tidy removes it:
// every process flume started for
// it (readying and remove steps, and what they left running, carry its
// FLUME_PLACE and FLUME_PATH; its agents are ended by their session), and
// every process listening on its leased ports with the job that started
// it (npm start, sh -c, nodemon: its ancestors in its process group that
// work inside the place), each sent SIGTERM, then SIGKILL, and verified
// gone (X5). A process flume did not start that is in none of those but works
// inside the place (a person's shell, an editor) is never signalled: the
// place is kept, naming it. Nor is a process of another user, whatever
// port it holds. The calling process, its ancestors, and flume's and
// git's own processes are never touched. It returns why the place is
// kept, "" when nothing runs in it any more.
func StopPlaceProcesses(p *record.Place) string {
	spare := map[int]bool{os.Getpid(): true}
	for _, pid := range proc.Ancestors(os.Getpid()) {
		spare[pid] = true
	}
	var stop []int
	add := func(pid int) {
		if !spare[pid] && !slices.Contains(stop, pid) && proc.Owner(pid) == os.Geteuid() {
			stop = append(stop, pid)
		}
	}
	for _, pid := range proc.WithEnvAll("FLUME_PLACE="+p.ID, "FLUME_PATH="+p.Path) {
		add(pid)
	}
	if p.Run != nil && len(p.Run.Ports) > 0 {
		var ports []int
		for _, port := range p.Run.Ports {
			ports = append(ports, port)
		}
		for _, pid := range proc.Listening(ports) {
			if proc.Owner(pid) != os.Geteuid() {
				continue // another user's: never ours to end
			}
			add(pid)
			for _, up := range jobOf(pid, p.Path, spare) {
				add(up)
			}
		}
	}
	// First what nobody may end: then nothing is ended for a place that
	// stays anyway.
	for _, pid := range proc.CwdUnder(p.Path) {
		// flume's own background work (a hook's advance runs where its
		// commit was made) and the git processes of a reading are not
		// the place's; they never write in a removed worktree.
		if name := comm(pid); !spare[pid] && !slices.Contains(stop, pid) && name != "git-flume" && name != "git" {
			return fmt.Sprintf("process %d (%s) works inside it, and flume did not start it: tidy removes nothing from under a running process (end it, then tidy again)", pid, name)
		}
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		for _, pid := range stop {
			if proc.Alive(pid) {
				_ = syscall.Kill(pid, sig) // checked below: gone, or named
			}
		}
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && anyAlive(stop); {
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, pid := range stop {
		if proc.Alive(pid) {
			return fmt.Sprintf("process %d (%s), which it started, did not exit", pid, comm(pid))
		}
	}
	return ""
}

// jobOf is the job a listener belongs to: its ancestors, nearest first,
// while each is in its process group and works inside the place at dir,
// up to one of spare. A shell with job control gives each job a group of
// its own and keeps another, so the person's shell that ran `npm start`
// is never among them; `npm start`, its `sh -c` and nodemon are.
func jobOf(pid int, dir string, spare map[int]bool) []int {
	group := proc.Group(pid)
	var job []int
	for _, up := range proc.Ancestors(pid) {
		if spare[up] || group == 0 || proc.Group(up) != group || !proc.CwdIn(up, dir) {
			break
		}
		job = append(job, up)
	}
	return job
}

func anyAlive(pids []int) bool {
	return slices.ContainsFunc(pids, proc.Alive)
}

func comm(pid int) string {
	_, name, _ := proc.Parent(pid)
	return name
}
