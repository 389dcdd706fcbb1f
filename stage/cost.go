package stage

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

	"github.com/git-flume/git-flume/agent"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/internal/words"
)

// CostRow is one agent run's use, from its transcript (W6): every run of
// a stage (retry, go-on rounds) is a row of its own.
type CostRow struct {
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
	// and Depth its depth in the tree (issue 17).
	Parent string `json:"parent"`
	Depth  int    `json:"depth"`
	// Children sums the known costs of the finished sessions of the
	// places this run delegated, and theirs, all the way down; null when
	// the run delegated nothing. A running, blocked, rolled-back or
	// aborted session is not counted.
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
func runOutcome(p *Place, st *StageRecord, a *AgentRun, delivered bool) string {
	switch {
	case p.Parent != nil && p.Parent.Outcome == OutcomeRolledBack:
		return RunRolledBack
	case delivered:
		return RunFinished
	case a == st.Agent && !a.Ended && p.Phase == PhaseMade && p.Dropped == nil:
		return RunRunning
	case a == st.Agent && (st.State == StateBlocked || st.State == StateWaiting || st.State == StateStuck || st.State == StateParked):
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
func (r CostRow) CostText() string {
	if r.CostFrom == costNone {
		return "-"
	}
	if r.Cost == nil {
		return "?"
	}
	return fmt.Sprintf("$%.4f", *r.Cost)
}

// Costs are the rows of every stage that ran an agent, in place order,
// with their totals.
type Costs struct {
	Schema int       `json:"schema"`
	Rows   []CostRow `json:"rows"`
	// Total sums the rows; its cost sums the known costs only, and
	// Unpriced counts the rows whose cost is unknown, naming in
	// UnpricedModels the models that want a [price] section.
	Total          CostRow  `json:"total"`
	Unpriced       int      `json:"unpriced"`
	UnpricedModels []string `json:"unpricedModels"`
}

// TotalText is the grand total for people: the known costs' sum, with
// "+ ?" when some stages' costs are unknown.
func (c *Costs) TotalText() string {
	if c.Unpriced > 0 {
		return c.Total.CostText() + " + ?"
	}
	return c.Total.CostText()
}

// ReadCosts reads the tokens and cost of each stage's agent from its
// transcript (W6): for one place, or every place of the repository.
// Transcripts that carry no cost (Claude Code, Codex) are priced from the
// [price "MODEL"] sections of the configuration at the place's base; a
// cost neither recorded nor priced is unknown, never zero.
func ReadCosts(ctx context.Context, env *Env, repoDir, only string) (*Costs, error) {
	repo, store, err := env.Open(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	var places []*Place
	if only != "" {
		// The place and every place it delegated, all the way down.
		for queue := []string{only}; len(queue) > 0; queue = queue[1:] {
			_, p, err := ReadPlace(ctx, store, queue[0])
			var nf *NotFoundError
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
		records, _, err := store.List(ctx, PlacePrefix)
		if err != nil {
			return nil, err
		}
		for _, rec := range records {
			var p Place
			if rec.Decode(&p) == nil {
				places = append(places, &p)
			}
		}
		sort.Slice(places, func(i, j int) bool { return places[i].ID < places[j].ID })
	}
	zero := 0.0
	c := &Costs{Schema: 1, Rows: []CostRow{}, Total: CostRow{Place: "total", Cost: &zero, Models: []string{}}, UnpricedModels: []string{}}
	book := NewPriceBook(env, repo)
	unpriced := map[string]bool{}
	for _, p := range places {
		prices, err := book.At(ctx, p.Base)
		if err != nil {
			return nil, err
		}
		for si := range p.Stages {
			st := &p.Stages[si]
			runs := StageRuns(st)
			for i, a := range runs {
				var next *AgentRun
				if i+1 < len(runs) {
					next = runs[i+1]
				}
				// A run whose session the next one resumed had delivered:
				// only a delivered stage is reopened.
				delivered := i == len(runs)-1 && (st.State == StateDelivered || st.State == StateLanded) || next != nil && next.Resumed
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

// delegationTree orders rows as the places' tree (issue 17): each place's
// rows, then those of the places it delegated, indented by depth; and sets
// on each run that delegated the finished descendants' cost.
func delegationTree(places []*Place, rows []CostRow) []CostRow {
	byPlace := map[string][]int{}
	for i, r := range rows {
		byPlace[r.Place] = append(byPlace[r.Place], i)
	}
	byID := map[string]*Place{}
	for _, p := range places {
		byID[p.ID] = p
	}
	// children are the places p delegated whose records say so too.
	children := func(p *Place) []*Place {
		var out []*Place
		for _, id := range p.Children {
			if c, ok := byID[id]; ok && c.Parent != nil && c.Parent.Parent == p.ID {
				out = append(out, c)
			}
		}
		return out
	}
	var finished func(p *Place, seen map[string]bool) (float64, int)
	finished = func(p *Place, seen map[string]bool) (sum float64, unpriced int) {
		if seen[p.ID] {
			return 0, 0 // a cycle no valid tree makes: counted once
		}
		seen[p.ID] = true
		for _, i := range byPlace[p.ID] {
			switch r := rows[i]; {
			case r.Outcome != RunFinished || r.CostFrom == costNone:
			case r.Cost != nil:
				sum += *r.Cost
			default:
				unpriced++
			}
		}
		for _, c := range children(p) {
			s, u := finished(c, seen)
			sum, unpriced = sum+s, unpriced+u
		}
		return sum, unpriced
	}
	out := make([]CostRow, 0, len(rows))
	done := map[string]bool{}
	var visit func(p *Place, depth int)
	visit = func(p *Place, depth int) {
		if done[p.ID] {
			return
		}
		done[p.ID] = true
		for _, i := range byPlace[p.ID] {
			r := rows[i]
			r.Depth = depth
			for _, c := range children(p) {
				if c.Parent.Stage == r.stage && c.Parent.Run == r.Run {
					sum, unpriced := finished(c, map[string]bool{p.ID: true})
					if r.Children != nil {
						sum += *r.Children
					}
					r.Children, r.ChildrenUnpriced = &sum, r.ChildrenUnpriced+unpriced
				}
			}
			out = append(out, r)
		}
		for _, c := range children(p) {
			visit(c, depth+1)
		}
	}
	for _, p := range places {
		if p.Parent == nil || byID[p.Parent.Parent] == nil || !slices.Contains(byID[p.Parent.Parent].Children, p.ID) {
			visit(p, 0)
		}
	}
	for _, p := range places {
		visit(p, 0)
	}
	return out
}

// costNone is a run's CostFrom when it never had a transcript.
const costNone = "none"

// runCost is agent run a's row (run n of stage st, next the run after it,
// if any): its transcript's tokens and cost, read only for a place of this
// host (local), since a record's paths are another host's otherwise. It
// also returns the models that want a price.
func runCost(p *Place, st *StageRecord, a, next *AgentRun, n int, delivered bool, prices map[string]Price, local bool) (CostRow, []string) {
	row := CostRow{Place: p.ID, Stage: st.Name, Run: max(n, 1), Agent: a.Program, Delivered: delivered, Models: []string{}}
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
	row.Cost, row.CostFrom, missing = UsageCost(u, prices)
	return row, missing
}

// add counts row in the table and its total; a run with no transcript
// counts nothing, one whose cost is unknown counts as unpriced.
func (c *Costs) add(row CostRow) {
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
func NewPriceBook(env *Env, repo *git.Repo) *PriceBook { return &PriceBook{env: env, repo: repo} }

type PriceBook struct {
	env  *Env
	repo *git.Repo
	// byConfig maps a config blob id ("" for none, "?" for a base this
	// repository lacks) to its prices.
	byConfig map[string]map[string]Price
}

func (b *PriceBook) At(ctx context.Context, base string) (map[string]Price, error) {
	key, err := b.repo.BlobAt(ctx, base, ConfigPath)
	if err != nil {
		key = "?"
	}
	if prices, ok := b.byConfig[key]; ok {
		return prices, nil
	}
	cfg, err := LoadConfig(ctx, b.env.Runner, b.repo, base, b.env.UserConfig)
	if err != nil {
		// A base this repository lacks (another host's place): the
		// user-level file alone.
		if cfg, err = LoadFiles(ctx, b.env.Runner, b.env.UserConfig); err != nil {
			return nil, err
		}
	}
	if b.byConfig == nil {
		b.byConfig = map[string]map[string]Price{}
	}
	b.byConfig[key] = cfg.Prices
	return cfg.Prices, nil
}

// UsageCost is what usage cost: the transcript's own figure ("transcript"),
// else its tokens at the configured prices ("price"), else nil with the
// models that spent tokens and have no price.
func UsageCost(u agent.Usage, prices map[string]Price) (cost *float64, from string, missing []string) {
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

// WriteCosts prints the cost table, a row per session in the places' tree
// (issue 17): place, stage, run, agent, its mark (✓ finished; ✗ blocked,
// rolled back or aborted; … running), tokens, cost ("-" for a run that
// left no transcript) with "(+ $children)" on a run that delegated, and
// the grand total.
func WriteCosts(w io.Writer, c *Costs) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLACE\tSTAGE\tRUN\tAGENT\t\tTOKENS\tCOST")
	for _, r := range c.Rows {
		cost := r.CostText()
		if r.Children != nil {
			unknown := ""
			if r.ChildrenUnpriced > 0 {
				unknown = " + ?"
			}
			cost += fmt.Sprintf(" (+ $%.4f%s)", *r.Children, unknown)
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
func OwnUsage(a *AgentRun, u agent.Usage) agent.Usage {
	if a.UsageBefore == nil {
		return u
	}
	return u.Minus(*a.UsageBefore)
}
