package report

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/land"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/cost"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/radar"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/runner"
)

// StatusOptions select what status shows.
type StatusOptions struct {
	Repo  string
	Place string // a place id, or "" for all
	All   bool   // include tidied places
}

// Status is the `status --json` document, schema 1 (S3).
type Status struct {
	Schema   int             `json:"schema"`
	Places   []PlaceStatus   `json:"places"`
	Problems []StatusProblem `json:"problems"`
}

// PlaceStatus is one place as status shows it (S1).
type PlaceStatus struct {
	Place  string `json:"place"`
	Repo   string `json:"repo"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Branch string `json:"branch"`
	Path   string `json:"path"`
	Target string `json:"target"`
	Base   string `json:"base"`
	Brief  string `json:"brief"`
	Host   string `json:"host"`
	// Foreign marks another host's place, fetched by sync: read-only
	// here (R7).
	Foreign bool      `json:"foreign"`
	Created time.Time `json:"created"`
	Phase   string    `json:"phase"`
	// Tidied is why a tidied place was tidied ("landed", "dropped"):
	// its stage's state is as it was when its work ended.
	Tidied   string `json:"tidied,omitempty"`
	Worktree string `json:"worktree"` // present, missing, removed, elsewhere
	// BranchGone is set when a made place's branch is no longer in the
	// repository (deleted outside flume): its work is what its worktree
	// holds.
	BranchGone bool `json:"branchGone,omitempty"`
	// Run is what the place was given to run: its ports, its env files;
	// null when its repository declares no [run].
	Run *record.RunSetup `json:"run"`
	// Conflicts are the conflicts the radar knows for its head as it is:
	// with its target's tip or another open place, exact.
	Conflicts []record.Conflict `json:"conflicts,omitempty"`
	Stage     StageStatus       `json:"stage"`
	// Previous is the stage before the current one, once it ended: what
	// it delivered and its STAGE REPORT, or report-missing (W2).
	Previous *StageStatus `json:"previous"`
	Ready    ReadyStatus  `json:"ready"`
	Claim    *ClaimStatus `json:"claim"`
	Dropped  bool         `json:"dropped"`
	Kept     *string      `json:"kept"`
	Agent    *AgentStatus `json:"agent"`
	Watcher  *record.Proc `json:"watcher"`
	// NeedsWatcher is set when the place has timers to keep and no live
	// watcher: the command layer starts one.
	NeedsWatcher bool `json:"-"`
	// Runner names the runner a launch --on made the place through (M1).
	Runner string `json:"runner,omitempty"`
	// Heard is, for another host's place made for a runner, when that
	// host was last heard, from its record (M4); null when it never beat.
	Heard *HeardStatus `json:"heard,omitempty"`
	// Adopts is the lost place this one carries on (M5).
	Adopts *record.Adoption `json:"adopts,omitempty"`
	// LostTo is the place that adopted this one, its host lost (M5).
	LostTo *LostStatus `json:"lostTo,omitempty"`
	// kept: the record says its host keeps a watcher on it (engine.Kept).
	kept bool
	// Parent is the place that delegated this one ("" for a top-level
	// place), Children the places it delegated, in order, and Delegation
	// where it stands for its commissioner: working, finished, blocked,
	// accepted, rolled-back or aborted ("" when top-level). Depth is its
	// depth in the tree, 0 at the top.
	Parent     string   `json:"parent"`
	Children   []string `json:"children"`
	Delegation string   `json:"delegation"`
	Depth      int      `json:"depth"`
	// Child is the progress of its open delegated place, this host's;
	// null when it has none.
	Child *ChildProgress `json:"child"`
	// Land is where its submission to the lander stands (Q); omitted when
	// it was never submitted.
	Land *LandStatus `json:"land,omitempty"`
}

// LandStatus is a place's entry with the lander: queued, returned (with
// why: a check's words and the files of a conflict) or landed, and the
// proof of its last candidate.
type LandStatus struct {
	State     string      `json:"state"`
	Tip       string      `json:"tip"`
	Reason    string      `json:"reason,omitempty"`
	Conflicts []string    `json:"conflicts,omitempty"`
	Proof     *land.Proof `json:"proof,omitempty"`
	// Approval is a person's approval of the tip (Q7), where the target
	// asks for one.
	Approval *land.Approval `json:"approval,omitempty"`
}

// AgentStatus is the current stage's agent.
type AgentStatus struct {
	Program string `json:"program"`
	Session string `json:"session"`
	Pane    string `json:"pane"`
	// PaneHost is where the pane is: "tmux" or "herdr"; "" for the
	// operator's own terminal (print).
	PaneHost   string `json:"paneHost"`
	Transcript string `json:"transcript"`
	// State is "up", "ended" (flume ended it), "exited" (it ended by
	// itself) or "operator" (started by the operator from a printed
	// command); another host's is "up" while its record says its run goes
	// on, "silent" once that host is past its limit unheard.
	State string `json:"state"`
	Sends int    `json:"sends"`
	// Sandbox is what holds what the agent writes (A12): "landlock", or
	// "off: " and why; "" for a run recorded before it was kept.
	Sandbox string `json:"sandbox"`
	// Layers are the sandbox's layers the agent runs behind (A13).
	Layers string `json:"layers,omitempty"`
}

// StageStatus is the current stage: index is 1-based. Delivered is set
// in the same reading as a delivered state (S2).
type StageStatus struct {
	Index int    `json:"index"`
	Count int    `json:"count"`
	Name  string `json:"name"`
	// Run is the stage's current run, from 1 (retry and go-on start
	// another); 0 before its first agent.
	Run       int               `json:"run"`
	State     string            `json:"state"`
	Need      string            `json:"need"`
	Reason    string            `json:"reason"`
	Delivered string            `json:"delivered"`
	Tasks     *record.TaskCount `json:"tasks"`
	Started   *time.Time        `json:"started"`
	// ElapsedMs is the stage's time so far (or until it ended), BudgetMs
	// its budget (W1); Snapshots the work tree states kept (W3).
	ElapsedMs int64             `json:"elapsedMs"`
	BudgetMs  int64             `json:"budgetMs"`
	Snapshots []record.Snapshot `json:"snapshots"`
	// Report is the agent's STAGE REPORT (W2); ReportMissing flags a stage
	// that ended without one.
	Report        *record.Report `json:"report"`
	ReportMissing bool           `json:"reportMissing"`
	// Tokens and Cost are what the stage's agent spent, from its
	// transcript on this host (W6); Cost is null when unknown, as in cost.
	Tokens int      `json:"tokens"`
	Cost   *float64 `json:"cost"`
	// Next is the command that moves a stage on that waits for someone
	// (waiting, stuck, blocked, never-started, cut, unknown), "" otherwise.
	Next string `json:"next"`
}

// ReadyStatus is the last readying's outcome; ok with no step when nothing
// is declared or everything passed.
type ReadyStatus struct {
	OK      bool   `json:"ok"`
	Running bool   `json:"running"`
	Step    string `json:"step"`
	Exit    int    `json:"exit"`
	Tail    string `json:"tail"`
}

// ClaimStatus is the session bound to a place (R8).
type ClaimStatus struct {
	Key   string    `json:"key"`
	PID   int       `json:"pid"`
	Host  string    `json:"host"`
	Since time.Time `json:"since"`
	// Shared marks a key that is a working directory (cwd:): every
	// session started in that folder holds the claim as its own, so it
	// tells sessions there apart from no one (R8).
	Shared bool `json:"shared"`
}

// StatusProblem is a record status could not read, named by its ref (R5).
type StatusProblem struct {
	Ref   string `json:"ref"`
	Error string `json:"error"`
}

// ReadStatus reads every place of a repository: one listing of all flume
// records and one of the worktrees, whatever the number of places (R4).
// On the way it settles what dead processes left: a launch or readying that
// died, a claim whose session is gone (R8).
func ReadStatus(ctx context.Context, env *stage.Env, opts StatusOptions) (*Status, error) {
	repo, store, err := env.Open(ctx, opts.Repo)
	if err != nil {
		return nil, err
	}
	r := &statusReader{env: env, repo: repo, store: store, book: cost.NewPriceBook(env, repo), all: opts.All}
	st, others, err := r.read(ctx, opts)
	if err != nil {
		return nil, err
	}
	if opts.Place != "" && len(st.Places) == 0 {
		for _, pr := range st.Problems {
			if pr.Ref == record.PlacePrefix+opts.Place {
				// a place whose record cannot be acted on says why,
				// as the whole listing does
				return nil, errors.New(pr.Error)
			}
		}
		return nil, &record.NotFoundError{Place: opts.Place}
	}
	if opts.Place != "" && st.Places[0].Parent != "" {
		// One place read alone: its commissioner is read too, since a
		// parent of another host's makes no child here.
		if _, parent, err := record.ReadPlace(ctx, store, st.Places[0].Parent); err == nil && parent.Host != st.Places[0].Host {
			st.Places[0].Parent, st.Places[0].Delegation = "", ""
		}
	}
	if err := r.attachClaims(ctx, st, byPlace(others, refs.ClaimPrefix)); err != nil {
		return nil, err
	}
	sort.Slice(st.Places, func(i, j int) bool { return st.Places[i].Place < st.Places[j].Place })
	st.Places = treeOrder(st.Places)
	places, adopters := r.seen, r.adopters
	if opts.Place != "" && len(st.Places) > 0 {
		// One place shown: the radar pairs it with the others too.
		if all, _, err := store.List(ctx, record.PlacePrefix); err == nil {
			adopters = record.DecodePlaces(all)
			places = radar.Views(adopters)
		}
	}
	if len(st.Places) > 0 {
		attachConflicts(st, radar.KnownConflicts(env, repo, places))
	}
	lands, lander := byPlace(others, land.Prefix), ""
	if len(lands) > 0 {
		lander = stage.LanderRunning(repo.CommonDir, env.Host) // named only when an entry could wait on it
	}
	attachLanding(st, lands, lander)
	attachHeard(ctx, store, st, byPlace(others, record.HostPrefix), opts.Place != "", env.ClockNow())
	attachLost(st, adopters)
	if opts.Place == "" {
		attachLeftovers(ctx, env, repo, store, st)
	}
	return st, nil
}

// attachLeftovers names, as problems, what no place shows: a check
// worktree a killed lander left (Q4), a launch order of this clone's
// still waiting for its runner (M1).
func attachLeftovers(ctx context.Context, env *stage.Env, repo *git.Repo, store *refs.Store, st *Status) {
	for _, path := range stage.LandLeftovers(repo.CommonDir, env.Host) {
		st.Problems = append(st.Problems, StatusProblem{Error: "a lander killed mid-check left its check worktree " + path + ": git flume tidy removes it"})
	}
	read := func(id string) *record.Place {
		_, p, _ := record.ReadPlace(ctx, store, id)
		return p
	}
	for _, w := range runner.WaitingOrders(ctx, repo, read) {
		st.Problems = append(st.Problems, StatusProblem{Error: w.String()})
	}
	for _, o := range runner.RefusedOrders(repo.CommonDir) {
		st.Problems = append(st.Problems, StatusProblem{Error: o.String()})
	}
}

// HeardStatus is when a place's host was last heard (M4): the time its
// record says it last shared, by that host's clock, and whether it has
// been silent past its limit (three beats) while the place's record
// says it is kept there: what the record shows may then be stale.
type HeardStatus struct {
	At           time.Time `json:"at"`
	LimitSeconds int       `json:"limitSeconds"`
	Silent       bool      `json:"silent"`
}

// LostStatus is the place that carries on a lost one (M5), from its
// record.
type LostStatus struct {
	Place string    `json:"place"`
	Host  string    `json:"host"`
	Why   string    `json:"why"`
	At    time.Time `json:"at"`
}

// attachLost marks each place another of places adopts as lost to it.
func attachLost(st *Status, places []*record.Place) {
	by := map[string]*record.Place{}
	for _, p := range places {
		if p.Adopts != nil {
			by[p.Adopts.Place] = p
		}
	}
	for i := range st.Places {
		if p := by[st.Places[i].Place]; p != nil && p.Adopts.Host == st.Places[i].Host {
			st.Places[i].LostTo = &LostStatus{Place: p.ID, Host: p.Host, Why: p.Adopts.Why, At: p.Adopts.At}
		}
	}
}

// attachHeard gives each place of another host made for a runner its
// host's last heard, from the host records (read for the one place when
// one alone was read): from the records, never by asking the host.
func attachHeard(ctx context.Context, store *refs.Store, st *Status, records map[string]*refs.Record, one bool, now time.Time) {
	hosts := map[string]*record.Host{}
	for _, rec := range records {
		if h, ok := rec.Take().(*record.Host); ok {
			hosts[h.Host] = h
		}
	}
	for i := range st.Places {
		ps := &st.Places[i]
		if !ps.Foreign || ps.Runner == "" {
			continue
		}
		h := hosts[ps.Host]
		if h == nil && one {
			if rec, err := store.Read(ctx, record.HostRef(ps.Host)); err == nil {
				h, _ = rec.Take().(*record.Host)
			}
		}
		if h != nil {
			ps.Heard = &HeardStatus{At: h.Heard, LimitSeconds: int(h.SilentAfter() / time.Second), Silent: ps.kept && h.Silent(now)}
		}
		if ps.Heard != nil && ps.Heard.Silent && ps.Agent != nil && ps.Agent.State == "up" {
			ps.Agent.State = "silent" // as its record last said, from a host not heard since
		}
	}
}

// byPlace are the records under prefix by the place their ref ends in.
func byPlace(records []*refs.Record, prefix string) map[string]*refs.Record {
	out := map[string]*refs.Record{}
	for _, rec := range records {
		if id, ok := strings.CutPrefix(rec.Ref, prefix); ok {
			out[id] = rec
		}
	}
	return out
}

// attachLanding gives each place shown its entry with the lander (Q12), and, as
// its next step when it has none, what moves that entry on; lander names
// the lander running here, if one is.
func attachLanding(st *Status, lands map[string]*refs.Record, lander string) {
	for i := range st.Places {
		ps := &st.Places[i]
		var e land.Entry
		if rec := lands[ps.Place]; rec == nil || rec.Decode(&e) != nil {
			continue
		}
		ps.Land = &LandStatus{State: e.State, Tip: e.Tip, Reason: e.Reason, Conflicts: e.Conflicts, Proof: e.Proof}
		if e.Approved() {
			ps.Land.Approval = e.Approval
		}
		if !ps.Foreign && ps.Stage.Next == "" {
			ps.Stage.Next = landNext(&e, lander)
		}
	}
}

// landNext is what moves a land entry on, "" when nothing waits on a
// person: land a queued one, review and approve a proven one, fix and
// submit again a returned one; none while the lander running here (lander)
// takes it.
func landNext(e *land.Entry, lander string) string {
	switch {
	case e.State == land.Proven && !e.Approved():
		return fmt.Sprintf("review its candidate (git diff %.12s %.12s), then git flume approve %s", e.Proof.Base, e.Proof.Candidate, e.Place)
	case (e.State == land.Queued || e.State == land.Proven || e.State == land.Landing) && lander != "":
		return "none: the lander runs here (" + lander + ") and takes it"
	case e.State == land.Queued || e.State == land.Proven || e.State == land.Landing:
		return "git flume land"
	case e.State == land.Returned:
		return "fix its branch, then git flume submit " + e.Place
	}
	return ""
}

// attachConflicts gives each place shown its known conflicts; a place of
// this host that conflicts and has no agent running is told, as its next
// step, to bring its branch up to date.
func attachConflicts(st *Status, byPlace map[string][]record.Conflict) {
	for i := range st.Places {
		ps := &st.Places[i]
		ps.Conflicts = append(ps.Conflicts, byPlace[ps.Place]...)
		if !ps.Foreign && ps.Stage.Next == "" && (ps.Agent == nil || ps.Agent.State != "up") {
			ps.Stage.Next = radar.CatchUpStep(ps.Branch, ps.Path, ps.Conflicts)
		}
	}
}

// treeOrder puts each delegated place right after its commissioner, in
// the order it was delegated, and sets its depth; top-level
// places, and places whose commissioner is not shown, keep their order.
// It moves the places within their slice: a second slice of 10,000
// places' status was 7 MB of status's peak memory.
func treeOrder(places []PlaceStatus) []PlaceStatus {
	byID := make(map[string]int, len(places))
	for i, p := range places {
		byID[p.Place] = i
	}
	order := make([]int, 0, len(places))
	seen := make([]bool, len(places))
	// linked reports child j of place i: the link is in both records, of
	// one host (a place is delegated on the host that launched it: another
	// host's record is never a child here), and within the tree's depth.
	linked := func(i, j, depth int) bool {
		return places[j].Parent == places[i].Place && places[j].Host == places[i].Host &&
			slices.Contains(places[i].Children, places[j].Place) && depth < record.MaxTreeDepth
	}
	var visit func(i, depth int)
	visit = func(i, depth int) {
		if seen[i] {
			return
		}
		seen[i] = true
		places[i].Depth = depth
		order = append(order, i)
		for _, c := range places[i].Children {
			if j, ok := byID[c]; ok && linked(i, j, depth) {
				visit(j, depth+1)
			}
		}
	}
	for i, p := range places {
		j, ok := byID[p.Parent]
		if ok && places[j].Host != p.Host {
			// Another host's record naming a place here as its parent
			// is nobody's child here.
			places[i].Parent, places[i].Delegation = "", ""
		}
		if !ok || p.Parent == "" || places[j].Host != p.Host || !slices.Contains(places[j].Children, p.Place) {
			visit(i, 0)
		}
	}
	for i := range places {
		visit(i, 0) // a cycle no valid record makes: shown anyway
	}
	permute(places, order)
	return places
}

// permute puts s[order[k]] at k for every k, order a permutation of s's
// indexes, by following each cycle of it: one element held aside, no
// second slice. order is spent.
func permute[T any](s []T, order []int) {
	for k := range order {
		if order[k] < 0 {
			continue
		}
		held, j := s[k], k
		for order[j] != k {
			next := order[j]
			s[j], order[j] = s[next], -1
			j = next
		}
		s[j], order[j] = held, -1
	}
}

// read makes the status of each place among the records opts names, as
// the store decodes them (a record is let go once its place's status is
// made: 10,000 held at once were 23 MB), and returns the other records
// read: claims, landing entries, hosts.
func (r *statusReader) read(ctx context.Context, opts StatusOptions) (*Status, []*refs.Record, error) {
	st := &Status{Schema: 1, Places: []PlaceStatus{}, Problems: []StatusProblem{}}
	var others []*refs.Record
	var found []StatusProblem
	listed, err := r.each(ctx, opts, func(n int, rec *refs.Record) error {
		id, ok := strings.CutPrefix(rec.Ref, record.PlacePrefix)
		switch {
		case !ok:
			others = append(others, rec)
			return nil
		case opts.Place != "" && id != opts.Place:
			return nil
		case cap(st.Places) == 0:
			st.Places = make([]PlaceStatus, 0, n) // grown, it held two copies of 10,000 places
		}
		ps, problem, err := r.place(ctx, rec)
		if problem != "" {
			found = append(found, StatusProblem{Ref: rec.Ref, Error: problem})
		}
		if ps != nil {
			st.Places = append(st.Places, *ps)
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	for _, p := range listed {
		st.Problems = append(st.Problems, StatusProblem{Ref: p.Ref, Error: p.Err.Error()})
	}
	st.Problems = append(st.Problems, found...)
	return st, others, nil
}

// each gives fn the records status shows. One place reads its own record,
// claim and landing entry only: launch and every command naming a place
// read its status, and that must not grow with the places there are. All
// places are one listing of records (R4), decoded as they are walked.
func (r *statusReader) each(ctx context.Context, opts StatusOptions, fn func(int, *refs.Record) error) ([]*refs.Problem, error) {
	if opts.Place == "" {
		return r.store.Each(ctx, fn, refs.Prefix)
	}
	records, problems, err := readOne(ctx, r.store, record.PlaceRef(opts.Place), refs.ClaimRef(opts.Place), land.Ref(opts.Place))
	for _, rec := range records {
		if err == nil {
			err = fn(len(records), rec)
		}
	}
	return problems, err
}

// present tells whether place p's worktree is there, asked of git's files
// about that one worktree (its .git file naming an administrative folder
// of this repository, whose HEAD reads), for every place alike: a stat or
// two in process instead of a `git worktree list`, which would also call a
// deleted folder that git has not pruned yet present.
func (r *statusReader) present(p *record.Place) bool {
	_, err := r.repo.WorktreeBranch(p.Path)
	return err == nil
}

// attachClaims gives each place shown the live claim on it, if any.
func (r *statusReader) attachClaims(ctx context.Context, st *Status, claims map[string]*refs.Record) error {
	for i := range st.Places {
		ps := &st.Places[i]
		claim := claims[ps.Place]
		if claim == nil {
			continue
		}
		cs, err := r.store.ReadClaimRecord(ctx, claim, r.env.Host)
		if err != nil {
			return err
		}
		if cs.Record != nil {
			ps.Claim = &ClaimStatus{Key: cs.Claim.Key, PID: cs.Claim.PID, Host: cs.Claim.Host, Since: cs.Claim.Since,
				Shared: strings.HasPrefix(cs.Claim.Key, "cwd:")}
		}
	}
	return nil
}

// statusReader makes the status of one place after another.
type statusReader struct {
	env   *stage.Env
	repo  *git.Repo
	store *refs.Store
	book  *cost.PriceBook
	all   bool // tidied places too
	// seen is what the radar pairs of each place read, and adopters the
	// places that adopted a lost one: not whole records, held until
	// every place is.
	seen     []radar.Seen
	adopters []*record.Place
}

// place is the status of the place record rec (its claim attached after):
// nil for a tidied place unless all are shown, and a problem for a
// record that cannot be shown or acted on (R5). It writes nothing (a
// read never writes): an interrupted launch or readying of ours is shown
// as it stands, with what settles it.
func (r *statusReader) place(ctx context.Context, rec *refs.Record) (*PlaceStatus, string, error) {
	env := r.env
	decoded, err := record.DecodePlace(rec)
	if err != nil {
		return nil, err.Error(), nil
	}
	r.seen = append(r.seen, radar.View(decoded))
	if decoded.Adopts != nil {
		r.adopters = append(r.adopters, &record.Place{ID: decoded.ID, Host: decoded.Host, Adopts: decoded.Adopts})
	}
	p := *decoded
	if p.Host == env.Host {
		// A record of ours that does not live here is shown as a
		// problem and never acted on: no cleanup, no watcher.
		if err := stage.CheckHome(ctx, env, r.repo, &p); err != nil {
			return nil, err.Error(), nil
		}
	}
	p, problem := r.interrupted(p)
	if p.Phase == record.PhaseTidied && !r.all {
		return nil, problem, nil
	}
	ps := placeStatus(&p, env.ClockNow())
	if p.Host == env.Host {
		spent(ctx, r.book, r.repo.CommonDir, &p, p.Current, &ps.Stage)
		if ps.Previous != nil {
			spent(ctx, r.book, r.repo.CommonDir, &p, p.Current-1, ps.Previous)
		}
	}
	ps.Watcher, ps.Runner, ps.Adopts, ps.kept = p.Watcher, p.Runner, p.Adopts, engine.Kept(&p)
	if p.Host == env.Host && p.Phase == record.PhaseMade {
		ps.Child = openChildProgress(ctx, env, r.store, &p)
	}
	ps.NeedsWatcher = engine.NeedsWatcher(ctx, env, &p)
	ps.Agent = agentStatus(ctx, env, &p)
	if p.Host == env.Host && p.Phase == record.PhaseMade {
		ps.Stage.Next = engine.NextStep(&p, agentStateOf(ps.Agent))
	}
	ps.Worktree, ps.Foreign = r.worktree(&p)
	ps.BranchGone = !ps.Foreign && p.Phase == record.PhaseMade && branchGone(ctx, r.repo, &p)
	return &ps, problem, nil
}

// interrupted shows what a process of ours that died left of place p,
// without settling it: a launch cut short while making the place (tidy, or
// a launch of the same place, finishes it or removes what it made) and a
// readying cut short, shown as the interruption the engine's next step
// records.
func (r *statusReader) interrupted(p record.Place) (record.Place, string) {
	if p.Host != r.env.Host {
		return p, ""
	}
	if l := p.Launcher; p.Phase == record.PhaseMaking && (l == nil || !l.Alive(r.env.Host)) {
		return p, fmt.Sprintf("the launch of %s was interrupted: git flume tidy finishes the place or removes what it made", p.ID)
	}
	if ready, ok := stage.InterruptedReady(r.env, &p); ok {
		p.Ready = ready
	}
	return p, ""
}

// worktree says where place p's worktree stands, and whether the place is
// another host's.
func (r *statusReader) worktree(p *record.Place) (state string, foreign bool) {
	switch {
	case p.Host != r.env.Host:
		return "elsewhere", true
	case r.present(p):
		return "present", false
	case p.Phase == record.PhaseTidied:
		return "removed", false
	}
	return "missing", false
}

// branchGone says whether place p's branch is no longer in the repository.
func branchGone(ctx context.Context, repo *git.Repo, p *record.Place) bool {
	_, err := repo.ResolveRef(ctx, p.BranchRef())
	return errors.Is(err, git.ErrNotExist)
}

// agentStateOf is a's state; "" when there is no agent.
func agentStateOf(a *AgentStatus) string {
	if a == nil {
		return ""
	}
	return a.State
}

// agentStatus is the current stage's agent as status shows it.
func agentStatus(ctx context.Context, env *stage.Env, p *record.Place) *AgentStatus {
	a := record.CurrentRun(p)
	if a == nil {
		return nil
	}
	return &AgentStatus{Program: a.Program, Session: a.Session, Pane: a.Pane, PaneHost: record.AgentPaneHost(a), Transcript: a.Transcript, Sends: a.Sends, Sandbox: a.Sandbox, Layers: a.Layers,
		State: engine.AgentState(ctx, env, p)}
}

// readOne reads the named records (one place's and its claim) as List
// would, in process where git's files allow.
func readOne(ctx context.Context, store *refs.Store, names ...string) ([]*refs.Record, []*refs.Problem, error) {
	var records []*refs.Record
	var problems []*refs.Problem
	for _, ref := range names {
		rec, err := store.Read(ctx, ref)
		var malformed *refs.MalformedError
		var newer *refs.NewerSchemaError
		switch {
		case errors.Is(err, refs.ErrNotFound):
		case errors.As(err, &malformed), errors.As(err, &newer):
			problems = append(problems, &refs.Problem{Ref: ref, Err: err})
		case err != nil:
			return nil, nil, err
		default:
			records = append(records, rec)
		}
	}
	return records, problems, nil
}

func placeStatus(p *record.Place, now time.Time) PlaceStatus {
	ps := PlaceStatus{
		Place: p.ID, Repo: p.Repo, Kind: p.PlaceKind, Name: p.Name, Branch: p.Branch,
		Path: p.Path, Target: p.Target, Base: p.Base, Brief: p.Brief, Host: p.Host,
		Created: p.Created, Phase: p.Phase, Dropped: p.Dropped != nil,
		Ready: ReadyStatus{OK: true}, Children: append([]string{}, p.Children...), Delegation: record.DelegationState(p),
	}
	if p.Parent != nil {
		ps.Parent = p.Parent.Parent
	}
	if p.Phase == record.PhaseTidied && p.Tidied != nil {
		ps.Tidied = p.Tidied.Reason
	}
	ps.Run = p.Run
	if n := len(p.Stages); n > 0 && p.Current < n {
		s := p.Stages[p.Current]
		ps.Stage = StageStatus{Index: p.Current + 1, Count: n, Name: s.Name, Run: s.Runs, State: s.State,
			Need: s.Need, Reason: s.Reason, Delivered: s.Delivered, Tasks: s.Tasks, Started: s.Started,
			BudgetMs: s.BudgetMs, Snapshots: append([]record.Snapshot{}, s.Snapshots...), Report: s.Report, ReportMissing: s.ReportMissing}
		if s.Started != nil {
			end := now // the timers' clock (Env.Clock), as the engine reads it
			if s.Ended != nil {
				end = *s.Ended
			}
			ps.Stage.ElapsedMs = max(end.Sub(*s.Started).Milliseconds(), 0)
		}
	}
	if c := p.Current; c > 0 && c <= len(p.Stages) {
		s := p.Stages[c-1]
		ps.Previous = &StageStatus{Index: c, Count: len(p.Stages), Name: s.Name, Run: s.Runs, State: s.State, Need: s.Need, Reason: s.Reason,
			Delivered: s.Delivered, Tasks: s.Tasks, Started: s.Started, BudgetMs: s.BudgetMs,
			Snapshots: append([]record.Snapshot{}, s.Snapshots...), Report: s.Report, ReportMissing: s.ReportMissing}
		if s.Started != nil && s.Ended != nil {
			ps.Previous.ElapsedMs = s.Ended.Sub(*s.Started).Milliseconds()
		}
	}
	if r := p.Ready; r != nil {
		ps.Ready = ReadyStatus{OK: r.OK, Running: r.Running != nil, Step: r.Step, Exit: r.Exit, Tail: r.Tail}
	}
	if p.Kept != "" {
		kept := p.Kept
		ps.Kept = &kept
	}
	return ps
}

// usageCache is the usage an agent's transcript showed when it had this
// size and modification time.
type usageCache struct {
	Size    int64       `json:"size"`
	ModTime int64       `json:"modTime"`
	Usage   agent.Usage `json:"usage"`
}

// EnsureWatchers starts a watcher for each place of st that needs one (a
// stage that runs, no live watcher): env.StartWatcher runs it detached.
// With no StartWatcher none is started.
func EnsureWatchers(env *stage.Env, repoDir string, st *Status) {
	if env.StartWatcher == nil || st == nil {
		return
	}
	for _, p := range st.Places {
		if p.NeedsWatcher {
			env.StartWatcher(repoDir, p.Place)
		}
	}
}
