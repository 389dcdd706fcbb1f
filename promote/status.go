package promote

import (
	"context"
	"maps"
	"slices"

	"github.com/git-flume/git-flume/promote/request"
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
	Mode    string                   `json:"mode"`
	Goal    string                   `json:"goal"`
	Worker  *request.Worker          `json:"worker,omitempty"`
	Inputs  map[string]request.Input `json:"inputs,omitempty"`
	Members map[string]MemberStatus  `json:"members"`
	// Missing are selected repositories with no record: an interrupted
	// allocation.
	Missing     []string         `json:"missing,omitempty"`
	Candidates  Expected         `json:"candidates,omitempty"`
	Tips        Expected         `json:"tips,omitempty"`
	Checks      []request.Result `json:"checks,omitempty"`
	FinalChecks []request.Result `json:"finalChecks,omitempty"`
	// Direct work: Task is the id of the task whose worker runs or ran
	// last; Tasks what each ended task left.
	Task  string               `json:"task,omitempty"`
	Tasks []request.TaskResult `json:"tasks,omitempty"`
}

// MemberStatus is one repository of a request.
type MemberStatus struct {
	Repository      string            `json:"repository"`
	Branch          string            `json:"branch"`
	Base            string            `json:"base"`
	Tip             string            `json:"tip,omitempty"`
	Phase           string            `json:"phase"`
	Reason          string            `json:"reason,omitempty"`
	Promotion       string            `json:"promotion,omitempty"`
	Receipt         *request.Receipt  `json:"receipt,omitempty"`
	Manual          string            `json:"manual,omitempty"`
	WorkerTree      *request.Tree     `json:"workerTree,omitempty"`
	IntegrationTree *request.Tree     `json:"integrationTree,omitempty"`
	Candidate       *request.Identity `json:"candidate,omitempty"`
	Staged          *request.Identity `json:"staged,omitempty"`
	// Direct work: Reserved says this host's reservation of the checkout
	// is the request's; Report is what became of the checkout.
	Reserved bool            `json:"reserved,omitempty"`
	Report   *request.Report `json:"report,omitempty"`
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
			st.Mode = request.ModeIsolated
		}
		if first.Request.Direct() {
			st.Task, st.Tasks = first.Request.Tasks[min(first.Task, len(first.Request.Tasks)-1)].ID, first.Tasks
		}
		for _, name := range slices.Sorted(maps.Keys(first.Request.Repositories)) {
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
	if st.Mode == request.ModeDirect && held && st.Phase != request.PhaseWorking && st.Phase != request.PhaseAllocating {
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
	if r.Phase == request.PhaseValidated && (r.State == Promoted || r.State == Intent) {
		// Its record stays validated (the tip it checked); where it stands
		// is the promotion's: its main at the tip, or being moved.
		ms.Phase = map[string]string{Promoted: Promoted, Intent: "promoting"}[r.State]
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
	case manual > 0 || phases[request.PhaseManual] > 0:
		return "manual"
	case intent > 0 || phases[request.PhaseStaging] > 0:
		return "interrupted"
	case phases[request.PhaseCleaned] == n:
		return request.PhaseCleaned
	case promoted == n:
		return Promoted
	case promoted > 0:
		return "promoting"
	case missing:
		return request.PhaseAllocating
	case len(phases) == 1:
		return members[0].r.Phase
	}
	return "mixed"
}
