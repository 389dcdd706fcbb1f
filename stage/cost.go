package stage

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/git-flume/git-flume/agents"
)

// CostRow is one stage's agent use, from its transcript (W6).
type CostRow struct {
	Place      string  `json:"place"`
	Stage      string  `json:"stage"`
	Agent      string  `json:"agent"`
	Delivered  bool    `json:"delivered"`
	Input      int     `json:"input"`
	Output     int     `json:"output"`
	CacheRead  int     `json:"cacheRead"`
	CacheWrite int     `json:"cacheWrite"`
	Tokens     int     `json:"tokens"`
	Cost       float64 `json:"cost"`
	// Transcript is "" when the stage's transcript could not be read here
	// (another host's place, or removed): its row counts nothing.
	Transcript string `json:"transcript"`
}

// Costs are the rows of every stage that ran an agent, in place order,
// with their totals.
type Costs struct {
	Schema int       `json:"schema"`
	Rows   []CostRow `json:"rows"`
	Total  CostRow   `json:"total"`
}

// ReadCosts reads the tokens and cost of each stage's agent from its
// transcript (W6): for one place, or every place of the repository.
// Programs whose transcripts carry no cost (Claude Code, Codex) count
// tokens only.
func ReadCosts(ctx context.Context, env *Env, repoDir, only string) (*Costs, error) {
	_, store, err := env.open(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	var places []*Place
	if only != "" {
		_, p, err := readPlace(ctx, store, only)
		if err != nil {
			return nil, err
		}
		places = append(places, p)
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
	c := &Costs{Schema: 1, Rows: []CostRow{}, Total: CostRow{Place: "total"}}
	for _, p := range places {
		for _, st := range p.Stages {
			a := st.Agent
			if a == nil {
				continue
			}
			row := CostRow{Place: p.ID, Stage: st.Name, Agent: a.Program, Delivered: st.State == StateDelivered || st.State == StateLanded}
			if a.Transcript != "" {
				if tr, err := agents.ReadTranscriptFile(a.Transcript, a.Format); err == nil {
					u := tr.Usage
					row.Input, row.Output, row.CacheRead, row.CacheWrite, row.Cost = u.Input, u.Output, u.CacheRead, u.CacheWrite, u.Cost
					row.Tokens = u.Input + u.Output + u.CacheRead + u.CacheWrite
					row.Transcript = a.Transcript
				}
			}
			c.Rows = append(c.Rows, row)
			c.Total.Input += row.Input
			c.Total.Output += row.Output
			c.Total.CacheRead += row.CacheRead
			c.Total.CacheWrite += row.CacheWrite
			c.Total.Tokens += row.Tokens
			c.Total.Cost += row.Cost
		}
	}
	return c, nil
}

// WriteCosts prints the cost table: place, stage, agent, ✓/✗, tokens,
// cost, and the grand total.
func WriteCosts(w io.Writer, c *Costs) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLACE\tSTAGE\tAGENT\t\tTOKENS\tCOST")
	for _, r := range append(c.Rows, c.Total) {
		mark := "✗"
		if r.Delivered {
			mark = "✓"
		}
		agent := r.Agent
		if r.Place == "total" {
			mark, agent = "", ""
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t$%.4f\n", r.Place, r.Stage, agent, mark, r.Tokens, r.Cost)
	}
	return tw.Flush()
}

// ToolLine is one tool call of a stage's agent (W4).
type ToolLine struct {
	Stage string `json:"stage"`
	Run   int    `json:"run"`
	Tool  string `json:"tool"`
	Input string `json:"input"`
}

// ReadToolLog reads the tool calls of every stage's agent of a place from
// their transcripts, in stage order.
func ReadToolLog(ctx context.Context, env *Env, repoDir, id string) ([]ToolLine, error) {
	_, store, err := env.open(ctx, repoDir)
	if err != nil {
		return nil, err
	}
	_, p, err := readPlace(ctx, store, id)
	if err != nil {
		return nil, err
	}
	var lines []ToolLine
	for _, st := range p.Stages {
		a := st.Agent
		if a == nil || a.Transcript == "" {
			continue
		}
		tr, err := agents.ReadTranscriptFile(a.Transcript, a.Format)
		if err != nil {
			continue
		}
		for _, t := range tr.Tools {
			lines = append(lines, ToolLine{Stage: st.Name, Run: st.Runs, Tool: t.Name, Input: t.Input})
		}
	}
	return lines, nil
}
