package cost

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	agent "github.com/git-flume/git-flume/agents"
	agentrun "github.com/git-flume/git-flume/agents/run"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/words"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// Row is one agent run's use, from its transcript (W6): every run of
// a stage (retry, go-on rounds) is a row of its own.
type Row struct {
	Place string `json:"place"`
	Stage string `json:"stage"`
	// Run is the run of the stage, from 1; 0 in the total.
	Run   int    `json:"run"`
	Agent string `json:"agent"`
	// Delivered marks the run that delivered its stage.
	Delivered  bool `json:"delivered"`
	Input      int  `json:"input"`
	Output     int  `json:"output"`
	CacheRead  int  `json:"cacheRead"`
	CacheWrite int  `json:"cacheWrite"`
	Tokens     int  `json:"tokens"`
	// Cost is in US dollars, null when unknown: the transcript records
	// none and a model it names has no [price] in the configuration.
	// CostFrom says where it came from: "transcript", "price", "none" (the
	// run never had a transcript: its agent never started, and nothing is
	// counted) or "" (unknown).
	Cost     *float64 `json:"cost"`
	CostFrom string   `json:"costFrom"`
	// Models are the models the transcript names, by name.
	Models []string `json:"models"`
	// Transcript is "" when the stage's transcript could not be read here
	// (another host's place, or removed): its row counts nothing.
	Transcript string `json:"transcript"`
	// Outcome is how the run's session ended: finished (it delivered its
	// stage), blocked, rolled-back, aborted, or running; "" in the total.
	Outcome string `json:"outcome"`
	// Parent is the place that delegated this row's place ("" at the top)
	// and Depth its depth in the tree.
	Parent string `json:"parent"`
	Depth  int    `json:"depth"`
	// Children sums the known costs of the finished sessions of the
	// places this run delegated, and theirs, all the way down, and of
	// every session an accepted child ended; null when the run delegated
	// nothing. A running, blocked or rolled-back session is not counted,
	// nor an aborted one of a child not accepted.
	Children *float64 `json:"children"`
	// ChildrenUnpriced counts the finished descendant sessions whose cost
	// is unknown, which Children therefore lacks.
	ChildrenUnpriced int `json:"childrenUnpriced"`

	stage int // the stage's index, for matching its delegations
}

// Outcomes of a cost row's session.
const (
	RunFinished   = "finished"
	RunBlocked    = "blocked"
	RunRolledBack = "rolled-back"
	RunAborted    = "aborted"
	RunRunning    = "running"
)

// runOutcome is how run a of stage st of place p ended, delivered saying
// whether it delivered its stage.
func runOutcome(p *record.Place, st *record.StageRecord, a *agentrun.Agent, delivered bool) string {
	switch {
	case p.Parent != nil && p.Parent.Outcome == record.OutcomeRolledBack:
		return RunRolledBack
	case delivered:
		return RunFinished
	case a == st.Agent && !a.Ended && p.Phase == record.PhaseMade && p.Dropped == nil:
		return RunRunning
	case a == st.Agent && (st.State == agentrun.StateBlocked || st.State == agentrun.StateWaiting || st.State == agentrun.StateStuck || st.State == agentrun.StateParked):
		return RunBlocked
	}
	return RunAborted
}

// costMark is a row's mark in the table: ✓ finished, ✗ blocked, rolled
// back or aborted, … still running.
func costMark(outcome string) string {
	switch outcome {
	case RunFinished:
		return "✓"
	case RunRunning:
		return "…"
	case "":
		return ""
	}
	return "✗"
}

// CostText is the row's cost for people: dollars, or "?" when unknown.
func (r Row) CostText() string {
	if r.CostFrom == costNone {
		return "-"
	}
	if r.Cost == nil {
		return "?"
	}
	return fmt.Sprintf("$%.4f", *r.Cost)
}

// Table holds the rows of every stage that ran an agent, in place order,
// with their totals.
type Table struct {
	Schema int   `json:"schema"`
	Rows   []Row `json:"rows"`
	// Total sums the rows; its cost sums the known costs only, and
	// Unpriced counts the rows whose cost is unknown, naming in
	// UnpricedModels the models that want a [price] section.
	Total          Row      `json:"total"`
	Unpriced       int      `json:"unpriced"`
	UnpricedModels []string `json:"unpricedModels"`
}

// TotalText is the grand total for people: the known costs' sum, with
// "+ ?" when some stages' costs are unknown, and "?" alone when no cost
// is known ("$0.0000 + ?" said a sum of nothing).
func (c *Table) TotalText() string {
	switch {
	case c.Unpriced == 0:
		return c.Total.CostText()
	case !slices.ContainsFunc(c.Rows, func(r Row) bool { return r.Cost != nil }):
		return "?"
	}
	return c.Total.CostText() + " + ?"
}

// Read reads the tokens and cost of each stage's agent from its
// transcript (W6): for one place, or every place of the repository.
// Transcripts that carry no cost (Claude Code, Codex) are priced from the
// [price "MODEL"] sections of the configuration at the place's base; a
// cost neither recorded nor priced is unknown, never zero.
func Read(ctx context.Context, env *stage.Env, repoDir, only string) (*Table, error) {
	repo, store, err := env.Open(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	places, err := readPlaces(ctx, store, only)
	if err != nil {
		return nil, err
	}
	zero := 0.0
	c := &Table{Schema: 1, Rows: []Row{}, Total: Row{Place: "total", Cost: &zero, Models: []string{}}, UnpricedModels: []string{}}
	book := NewPriceBook(env, repo)
	unpriced := map[string]bool{}
	for _, p := range places {
		prices, err := book.At(ctx, p.ConfigRev())
		if err != nil {
			return nil, err
		}
		for si := range p.Stages {
			st := &p.Stages[si]
			runs := record.StageRuns(st)
			for i, a := range runs {
				var next *agentrun.Agent
				if i+1 < len(runs) {
					next = runs[i+1]
				}
				// A run whose session the next one resumed had delivered:
				// only a delivered stage is reopened.
				delivered := i == len(runs)-1 && (st.State == agentrun.StateDelivered || st.State == record.StateLanded) || next != nil && next.Resumed
				row, missing := runCost(p, st, a, next, st.Runs-len(runs)+i+1, delivered, prices, p.Host == env.Host)
				row.stage, row.Outcome = si, runOutcome(p, st, a, delivered)
				if p.Parent != nil {
					row.Parent = p.Parent.Parent
				}
				for _, m := range missing {
					unpriced[m] = true
				}
				c.add(row)
			}
		}
	}
	c.Rows = delegationTree(places, c.Rows)
	c.UnpricedModels = slices.Sorted(maps.Keys(unpriced))
	if c.UnpricedModels == nil {
		c.UnpricedModels = []string{}
	}
	return c, nil
}

// readPlaces reads place only and every place it delegated, all the way
// down, or, with only "", every place of the repository in id order.
func readPlaces(ctx context.Context, store *refs.Store, only string) ([]*record.Place, error) {
	var places []*record.Place
	if only != "" {
		// The place and every place it delegated, all the way down.
		for queue := []string{only}; len(queue) > 0; queue = queue[1:] {
			_, p, err := record.ReadPlace(ctx, store, queue[0])
			var nf *record.NotFoundError
			if errors.As(err, &nf) && queue[0] != only {
				continue
			}
			if err != nil {
				return nil, err
			}
			places = append(places, p)
			queue = append(queue, p.Children...)
		}
	} else {
		records, _, err := store.List(ctx, record.PlacePrefix)
		if err != nil {
			return nil, err
		}
		for _, rec := range records {
			if p, err := record.DecodePlace(rec); err == nil {
				places = append(places, p)
			}
		}
		sort.Slice(places, func(i, j int) bool { return places[i].ID < places[j].ID })
	}
	return places, nil
}

// delegationTree orders rows as the places' tree: each place's
// rows, then those of the places it delegated, indented by depth; and sets
// on each run that delegated the finished descendants' cost.
func delegationTree(places []*record.Place, rows []Row) []Row {
	t := &costTree{rows: rows, byPlace: map[string][]int{}, byID: map[string]*record.Place{}, done: map[string]bool{}}
	for i, r := range rows {
		t.byPlace[r.Place] = append(t.byPlace[r.Place], i)
	}
	for _, p := range places {
		t.byID[p.ID] = p
	}
	t.out = make([]Row, 0, len(rows))
	for _, p := range places {
		if p.Parent == nil || t.byID[p.Parent.Parent] == nil || !slices.Contains(t.byID[p.Parent.Parent].Children, p.ID) {
			t.visit(p, 0)
		}
	}
	for _, p := range places {
		t.visit(p, 0)
	}
	return t.out
}

// costTree is delegationTree's walk: the rows by place, the places by id,
// the rows put out so far and the places visited.
type costTree struct {
	rows    []Row
	byPlace map[string][]int
	byID    map[string]*record.Place
	out     []Row
	done    map[string]bool
}

// children are the places p delegated whose records say so too.
func (t *costTree) children(p *record.Place) []*record.Place {
	var out []*record.Place
	for _, id := range p.Children {
		if c, ok := t.byID[id]; ok && c.Parent != nil && c.Parent.Parent == p.ID {
			out = append(out, c)
		}
	}
	return out
}

// finished is the cost of p's finished runs and its descendants', and how
// many of them are unpriced; seen guards against a cycle no valid tree
// makes, counting each place once.
func (t *costTree) finished(p *record.Place, seen map[string]bool) (sum float64, unpriced int) {
	if seen[p.ID] {
		return 0, 0
	}
	seen[p.ID] = true
	// A child whose work its commissioner accepted spent every session it
	// ended towards what was accepted, delivered or not (its rows said
	// aborted, and the commissioner's run showed + $0.0000).
	accepted := p.Parent != nil && p.Parent.Outcome == record.OutcomeAccepted
	for _, i := range t.byPlace[p.ID] {
		switch r := t.rows[i]; {
		case r.CostFrom == costNone, r.Outcome != RunFinished && !(accepted && r.Outcome == RunAborted):
		case r.Cost != nil:
			sum += *r.Cost
		default:
			unpriced++
		}
	}
	for _, c := range t.children(p) {
		s, u := t.finished(c, seen)
		sum, unpriced = sum+s, unpriced+u
	}
	return sum, unpriced
}

// visit puts out p's rows at depth, each run that delegated carrying its
// finished children's cost, then its children's rows one deeper.
func (t *costTree) visit(p *record.Place, depth int) {
	if t.done[p.ID] {
		return
	}
	t.done[p.ID] = true
	for _, i := range t.byPlace[p.ID] {
		r := t.rows[i]
		r.Depth = depth
		for _, c := range t.children(p) {
			if c.Parent.Stage == r.stage && c.Parent.Run == r.Run {
				sum, unpriced := t.finished(c, map[string]bool{p.ID: true})
				if r.Children != nil {
					sum += *r.Children
				}
				r.Children, r.ChildrenUnpriced = &sum, r.ChildrenUnpriced+unpriced
			}
		}
		t.out = append(t.out, r)
	}
	for _, c := range t.children(p) {
		t.visit(c, depth+1)
	}
}

// costNone is a run's CostFrom when it never had a transcript.
const costNone = "none"

// runCost is agent run a's row (run n of stage st, next the run after it,
// if any): its transcript's tokens and cost, read only for a place of this
// host (local), since a record's paths are another host's otherwise. It
// also returns the models that want a price.
func runCost(p *record.Place, st *record.StageRecord, a, next *agentrun.Agent, n int, delivered bool, prices map[string]stage.Price, local bool) (Row, []string) {
	row := Row{Place: p.ID, Stage: st.Name, Run: max(n, 1), Agent: a.Program, Delivered: delivered, Models: []string{}}
	if a.Transcript == "" {
		row.CostFrom = costNone
		return row, nil
	}
	if !local {
		return row, nil
	}
	tr, err := agent.ReadTranscriptFile(a.Transcript, a.Format)
	if err != nil {
		return row, nil
	}
	u := OwnUsage(a, tr.Usage)
	if next != nil && next.Resumed && next.Transcript == a.Transcript && next.UsageBefore != nil {
		// W6: the next run went on in a's session; a spent what the
		// transcript counted when that run began.
		u = OwnUsage(a, *next.UsageBefore)
	}
	row.Input, row.Output, row.CacheRead, row.CacheWrite = u.Input, u.Output, u.CacheRead, u.CacheWrite
	row.Tokens = u.Sum()
	row.Transcript = a.Transcript
	for _, m := range slices.Sorted(maps.Keys(u.Models)) {
		if m != "" {
			row.Models = append(row.Models, m)
		}
	}
	var missing []string
	row.Cost, row.CostFrom, missing = OfUsage(u, prices)
	return row, missing
}

// add counts row in the table and its total; a run with no transcript
// counts nothing, one whose cost is unknown counts as unpriced.
func (c *Table) add(row Row) {
	c.Rows = append(c.Rows, row)
	c.Total.Input += row.Input
	c.Total.Output += row.Output
	c.Total.CacheRead += row.CacheRead
	c.Total.CacheWrite += row.CacheWrite
	c.Total.Tokens += row.Tokens
	switch {
	case row.CostFrom == costNone:
	case row.Cost != nil:
		*c.Total.Cost += *row.Cost
	default:
		c.Unpriced++
	}
}

// PriceBook reads the [price] sections a place's costs are figured at: the
// configuration at its base (the repository's .flume/config there and the
// user-level file), once per distinct .flume/config: places share a few
// versions of it however many bases they have, so status spawns no more
// git as places grow (R4).
// NewPriceBook reads prices for repo's places as they are asked for.
func NewPriceBook(env *stage.Env, repo *git.Repo) *PriceBook { return &PriceBook{env: env, repo: repo} }

type PriceBook struct {
	env  *stage.Env
	repo *git.Repo
	// byConfig maps a config blob id ("" for none, "?" for a base this
	// repository lacks) to its prices.
	byConfig map[string]map[string]stage.Price
}

func (b *PriceBook) At(ctx context.Context, base string) (map[string]stage.Price, error) {
	key, err := b.repo.BlobAt(ctx, base, stage.ConfigPath)
	if err != nil {
		key = "?"
	}
	if prices, ok := b.byConfig[key]; ok {
		return prices, nil
	}
	cfg, err := stage.LoadConfig(ctx, b.env.Runner, b.repo, base, b.env.UserConfig)
	if err != nil {
		// A base this repository lacks (another host's place): the
		// user-level file alone.
		if cfg, err = stage.LoadFiles(ctx, b.env.Runner, b.env.UserConfig); err != nil {
			return nil, err
		}
	}
	if b.byConfig == nil {
		b.byConfig = map[string]map[string]stage.Price{}
	}
	b.byConfig[key] = cfg.Prices
	return cfg.Prices, nil
}

// OfUsage is what usage cost: the transcript's own figure ("transcript"),
// else its tokens at the configured prices ("price"), else nil with the
// models that spent tokens and have no price.
func OfUsage(u agent.Usage, prices map[string]stage.Price) (cost *float64, from string, missing []string) {
	if u.Priced {
		c := u.Cost
		return &c, "transcript", nil
	}
	sum := 0.0
	for _, model := range slices.Sorted(maps.Keys(u.Models)) {
		tokens := u.Models[model]
		if tokens.Sum() == 0 {
			continue
		}
		price, ok := prices[model]
		if !ok || model == "" {
			missing = append(missing, cmp.Or(model, "(unnamed)"))
			continue
		}
		sum += price.Cost(tokens)
	}
	if len(missing) > 0 {
		return nil, "", missing
	}
	return &sum, "price", nil
}

// Write prints the cost table, a row per session in the places' tree:
// place, stage, run, agent, its mark (✓ finished; ✗ blocked,
// rolled back or aborted; … running), tokens, cost ("-" for a run that
// left no transcript) with "(+ $children)" on a run that delegated, and
// the grand total.
func Write(w io.Writer, c *Table) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLACE\tSTAGE\tRUN\tAGENT\t\tTOKENS\tCOST")
	for _, r := range c.Rows {
		cost := r.CostText()
		switch {
		case r.Children == nil:
		case *r.Children == 0 && r.ChildrenUnpriced > 0:
			cost += " (+ ?)" // no child's cost known: not $0.0000
		case r.ChildrenUnpriced > 0:
			cost += fmt.Sprintf(" (+ $%.4f + ?)", *r.Children)
		default:
			cost += fmt.Sprintf(" (+ $%.4f)", *r.Children)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\n", words.TreeName(r.Place, r.Depth), r.Stage, r.Run, r.Agent, costMark(r.Outcome), r.Tokens, cost)
	}
	fmt.Fprintf(tw, "total\t\t\t\t\t%d\t%s\n", c.Total.Tokens, c.TotalText())
	if err := tw.Flush(); err != nil {
		return err
	}
	if c.Unpriced > 0 {
		stages := "run"
		if c.Unpriced > 1 {
			stages = "runs"
		}
		_, err := fmt.Fprintf(w, "cost unknown for %d %s: the transcripts record tokens, not prices; price their models in .flume/config: %s\n",
			c.Unpriced, stages, priceHint(c.UnpricedModels))
		return err
	}
	return nil
}

func priceHint(models []string) string {
	if len(models) == 0 {
		return "(their transcripts were not readable here)"
	}
	hints := make([]string, len(models))
	for i, m := range models {
		hints[i] = fmt.Sprintf("[price %q] input = … output = … cacheRead = … cacheWrite = …", m)
	}
	return strings.Join(hints, "; ")
}

// OwnUsage is what agent a spent of the usage u its transcript shows: all
// of it, unless a resumed an earlier run's session (W6).
func OwnUsage(a *agentrun.Agent, u agent.Usage) agent.Usage {
	if a.UsageBefore == nil {
		return u
	}
	return u.Minus(*a.UsageBefore)
}
