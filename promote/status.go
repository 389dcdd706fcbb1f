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
	// when a verb stopped between two members (run it again); direct
	// work that ended but still holds a checkout is "releasing".
	Phase string `json:"phase"`
	// Mode is the request's: "isolated" (checked) or "direct".
	Mode    string                  `json:"mode"`
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
	// Direct work: Task is the id of the task whose worker runs or ran
	// last; Tasks what each ended task left.
	Task  string       `json:"task,omitempty"`
	Tasks []TaskResult `json:"tasks,omitempty"`
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
	// Direct work: Reserved says this host's reservation of the checkout
	// is the request's; Report is what became of the checkout.
	Reserved bool    `json:"reserved,omitempty"`
	Report   *Report `json:"report,omitempty"`
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
		st.Goal, st.Mode = first.Request.Goal, first.Request.Mode
		if st.Mode == "" {
			st.Mode = ModeIsolated
		}
		if first.Request.Direct() {
			st.Task, st.Tasks = first.Request.Tasks[min(first.Task, len(first.Request.Tasks)-1)].ID, first.Tasks
		}
		for _, name := range sortedKeys(first.Request.Repositories) {
			if ws.member(name) == nil {
				st.Missing = append(st.Missing, name)
			}
		}
	}
	cands, tips := Expected{}, Expected{}
	held := false // a checkout still reserved for the request
	for _, m := range ws.members {
		ms, err := memberStatus(ctx, m)
		if err != nil {
			return nil, err
		}
		st.Members[m.t.Name] = ms
		held = held || ms.Reserved
		if m.r.Candidate != nil {
			cands[m.t.Name] = *m.r.Candidate
		}
		if m.r.Staged != nil {
			tips[m.t.Name] = *m.r.Staged
		}
	}
	if n := len(ws.members); len(st.Missing) == 0 {
		if len(cands) == n {
			st.Candidates = cands
		}
		if len(tips) == n {
			st.Tips = tips
		}
	}
	st.Phase = requestPhase(ws.members, len(st.Missing) > 0)
	if st.Mode == ModeDirect && held && st.Phase != PhaseWorking && st.Phase != PhaseAllocating {
		// Direct work records its ending (each member's report and phase)
		// before it lets its checkouts go: until then it is not done, and
		// a request started meanwhile is refused.
		st.Phase = PhaseReleasing
	}
	return st, nil
}

// PhaseReleasing is direct work whose members recorded their ending and
// whose reservations are not all released yet: it is over, but still
// holds a checkout (a crash there is settled by reconcile).
const PhaseReleasing = "releasing"

// memberStatus is one member as status shows it; for direct work, whether
// this host's reservation of its checkout is the request's.
func memberStatus(ctx context.Context, m *member) (MemberStatus, error) {
	r := m.r
	ms := MemberStatus{
		Repository: r.Repository, Branch: r.Branch, Base: r.Base, Tip: r.Tip, Phase: r.Phase, Reason: r.Reason,
		Promotion: r.State, Receipt: r.Receipt, Manual: r.Manual, WorkerTree: r.WorkerTree, IntegrationTree: r.IntegrationTree,
		Candidate: r.Candidate, Staged: r.Staged, Report: r.Report,
	}
	if r.Request.Direct() {
		_, res, err := m.reservation(ctx, r.Host)
		if err != nil {
			return ms, err
		}
		ms.Reserved = res != nil && res.Request == r.ID
	}
	return ms, nil
}

// requestPhase is the request's phase from its members': see Status.Phase.
func requestPhase(members []*member, missing bool) string {
	phases := map[string]int{}
	promoted, intent, manual := 0, 0, 0
	for _, m := range members {
		phases[m.r.Phase]++
		switch m.r.State {
		case Promoted:
			promoted++
		case Intent:
			intent++
		case Manual:
			manual++
		}
	}
	n := len(members)
	switch {
	case manual > 0 || phases[PhaseManual] > 0:
		return "manual"
	case intent > 0 || phases[PhaseStaging] > 0:
		return "interrupted"
	case phases[PhaseCleaned] == n:
		return PhaseCleaned
	case promoted == n:
		return Promoted
	case promoted > 0:
		return "promoting"
	case missing:
		return PhaseAllocating
	case len(phases) == 1:
		return members[0].r.Phase
	}
	return "mixed"
}

// WriteStatus prints a status for people.
func WriteStatus(w io.Writer, st *Status) {
	if st.Mode == ModeDirect {
		writeDirect(w, st)
		return
	}
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

// writeDirect prints direct work: the request, its worker, what each
// ended task said, then each checkout's change report or stale-read
// warning.
func writeDirect(w io.Writer, st *Status) {
	line := fmt.Sprintf("request %s (direct): %s", st.ID, st.Phase)
	if st.Phase == PhaseWorking {
		line += ", task " + st.Task
	}
	fmt.Fprintln(w, line)
	if wk := st.Worker; wk != nil && !wk.Ended {
		state := "running"
		if !wk.Confirmed {
			state = "prompt not confirmed yet"
		}
		fmt.Fprintf(w, "worker %s (session %s): %s\n", wk.Program, wk.Session, state)
	}
	for _, t := range st.Tasks {
		fmt.Fprintf(w, "  task %s (%s): %s\n", t.ID, t.Kind, firstLine(t.Answer))
	}
	for _, name := range sortedKeys(st.Members) {
		m := st.Members[name]
		head := fmt.Sprintf("  %-12s %-10s %s %.12s", name, m.Phase, m.Branch, m.Base)
		if m.Reserved {
			head += " [reserved]"
		}
		if m.Reason != "" {
			head += ": " + m.Reason
		}
		fmt.Fprintln(w, head)
		r := m.Report
		if r == nil {
			continue
		}
		switch {
		case r.Stale != "":
			fmt.Fprintf(w, "    stale read: %s\n", r.Stale)
		case r.To != r.From:
			fmt.Fprintf(w, "    %s %.12s -> %.12s: %d commits, %d files\n", r.Branch, r.From, r.To, len(r.Commits), len(r.Files))
			for _, c := range r.Commits {
				fmt.Fprintf(w, "      %s\n", c)
			}
			for _, f := range r.Files {
				fmt.Fprintf(w, "      %s\n", f)
			}
		default:
			fmt.Fprintf(w, "    %s unchanged at %.12s\n", r.Branch, r.From)
		}
		if r.Note != "" {
			fmt.Fprintf(w, "    note: %s\n", r.Note)
		}
		if len(r.Dirty) > 0 {
			fmt.Fprintf(w, "    uncommitted: %s\n", strings.Join(r.Dirty, ", "))
		}
		if len(r.DirtyBefore) > 0 {
			fmt.Fprintf(w, "    uncommitted before the request: %s\n", strings.Join(r.DirtyBefore, ", "))
		}
	}
	for _, name := range st.Missing {
		fmt.Fprintf(w, "  %-12s no record: allocation interrupted\n", name)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
