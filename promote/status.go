package promote

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// StatusSchema is the version of the workspace status document.
const StatusSchema = 1

// Status is a request as its members record it, read without changing
// anything. Candidates and Tips are exactly the maps a caller passes back
// as --expected to stage, and to validate and promote.
type Status struct {
	Schema int    `json:"schema"`
	ID     string `json:"id"`
	Root   string `json:"root"`
	// Phase is the request's: the members' common phase; "promoting",
	// "promoted", "interrupted" (reconcile first), "manual"; or "mixed"
	// when a verb stopped between two members (run it again).
	Phase   string                  `json:"phase"`
	Goal    string                  `json:"goal"`
	Worker  *Worker                 `json:"worker,omitempty"`
	Inputs  map[string]Input        `json:"inputs,omitempty"`
	Members map[string]MemberStatus `json:"members"`
	// Missing are selected repositories with no record: an interrupted
	// allocation.
	Missing     []string `json:"missing,omitempty"`
	Candidates  Expected `json:"candidates,omitempty"`
	Tips        Expected `json:"tips,omitempty"`
	Checks      []Result `json:"checks,omitempty"`
	FinalChecks []Result `json:"finalChecks,omitempty"`
}

// MemberStatus is one repository of a request.
type MemberStatus struct {
	Repository      string    `json:"repository"`
	Branch          string    `json:"branch"`
	Base            string    `json:"base"`
	Tip             string    `json:"tip,omitempty"`
	Phase           string    `json:"phase"`
	Reason          string    `json:"reason,omitempty"`
	Promotion       string    `json:"promotion,omitempty"`
	Receipt         *Receipt  `json:"receipt,omitempty"`
	Manual          string    `json:"manual,omitempty"`
	WorkerTree      *Tree     `json:"workerTree,omitempty"`
	IntegrationTree *Tree     `json:"integrationTree,omitempty"`
	Candidate       *Identity `json:"candidate,omitempty"`
	Staged          *Identity `json:"staged,omitempty"`
}

// ReadStatus reads a request's records; it changes nothing.
func ReadStatus(ctx context.Context, env *Env, root, id string) (*Status, error) {
	ws, err := load(ctx, env, root, id)
	if err != nil {
		return nil, err
	}
	first := ws.members[0].r
	st := &Status{Schema: StatusSchema, ID: id, Root: root, Worker: first.Worker, Inputs: first.Inputs, Members: map[string]MemberStatus{},
		Checks: first.Checks, FinalChecks: first.FinalChecks}
	if first.Request != nil {
		st.Goal = first.Request.Goal
		for _, name := range sortedKeys(first.Request.Repositories) {
			if ws.member(name) == nil {
				st.Missing = append(st.Missing, name)
			}
		}
	}
	cands, tips := Expected{}, Expected{}
	phases := map[string]int{}
	promoted, intent, manual := 0, 0, 0
	for _, m := range ws.members {
		r := m.r
		st.Members[m.t.Name] = MemberStatus{
			Repository: r.Repository, Branch: r.Branch, Base: r.Base, Tip: r.Tip, Phase: r.Phase, Reason: r.Reason,
			Promotion: r.State, Receipt: r.Receipt, Manual: r.Manual, WorkerTree: r.WorkerTree, IntegrationTree: r.IntegrationTree,
			Candidate: r.Candidate, Staged: r.Staged,
		}
		if r.Candidate != nil {
			cands[m.t.Name] = *r.Candidate
		}
		if r.Staged != nil {
			tips[m.t.Name] = *r.Staged
		}
		phases[r.Phase]++
		switch r.State {
		case Promoted:
			promoted++
		case Intent:
			intent++
		case Manual:
			manual++
		}
	}
	n := len(ws.members)
	if len(st.Missing) == 0 {
		if len(cands) == n {
			st.Candidates = cands
		}
		if len(tips) == n {
			st.Tips = tips
		}
	}
	switch {
	case manual > 0 || phases[PhaseManual] > 0:
		st.Phase = "manual"
	case intent > 0 || phases[PhaseStaging] > 0:
		st.Phase = "interrupted"
	case phases[PhaseCleaned] == n:
		st.Phase = PhaseCleaned
	case promoted == n:
		st.Phase = Promoted
	case promoted > 0:
		st.Phase = "promoting"
	case len(st.Missing) > 0:
		st.Phase = PhaseAllocating
	case len(phases) == 1:
		st.Phase = first.Phase
	default:
		st.Phase = "mixed"
	}
	return st, nil
}

// WriteStatus prints a status for people.
func WriteStatus(w io.Writer, st *Status) {
	fmt.Fprintf(w, "request %s: %s\n", st.ID, st.Phase)
	if st.Worker != nil {
		state := "running"
		switch {
		case st.Worker.Ended:
			state = "ended"
		case !st.Worker.Confirmed:
			state = "prompt not confirmed yet"
		}
		fmt.Fprintf(w, "worker %s (session %s): %s\n", st.Worker.Program, st.Worker.Session, state)
	}
	for _, name := range sortedKeys(st.Members) {
		m := st.Members[name]
		line := fmt.Sprintf("  %-12s %-10s %s %.12s", name, m.Phase, m.Branch, m.Base)
		if m.Tip != "" {
			line += fmt.Sprintf(" -> %.12s", m.Tip)
		}
		if m.Promotion != "" {
			line += " [" + m.Promotion + "]"
		}
		if m.Reason != "" {
			line += ": " + m.Reason
		}
		if m.Manual != "" {
			line += ": " + m.Manual
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	for _, name := range st.Missing {
		fmt.Fprintf(w, "  %-12s no record: allocation interrupted\n", name)
	}
	for _, r := range append(append([]Result(nil), st.Checks...), st.FinalChecks...) {
		mark := "ok"
		if !r.OK() {
			mark = fmt.Sprintf("exit %d", r.Exit)
			if r.Refused != "" {
				mark += ", refused " + r.Refused
			}
		}
		fmt.Fprintf(w, "  check %s: %s: %s\n", r.Repository, commandLine(Check{Command: r.Command, Args: r.Args}), mark)
	}
}
