package engine

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"strings"
	"text/template"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

//go:embed prompts/*.md
var shippedPrompts embed.FS

// promptData is what a stage prompt is rendered from.
type promptData struct {
	Place, Kind, Name, Branch, Path, Target, Brief string
	Stage, DeliverableText, Submit, ReadyFailure   string
}

func DescribeDeliverable(d string) string {
	switch {
	case d == stage.DeliverCommit:
		return "a new commit on the branch"
	case d == stage.DeliverTasks:
		return "every task in tasks.md is ticked and committed"
	case d == stage.DeliverLanded:
		return "the branch has landed on its target"
	case d == stage.DeliverChange:
		return "an OpenSpec change committed under openspec/changes/<name>/ with proposal.md and tasks.md"
	case strings.HasPrefix(d, stage.DeliverFile):
		return strings.TrimPrefix(d, stage.DeliverFile) + " exists"
	}
	return d
}

// renderPrompt renders the stage's prompt: a shipped one, or a declared one
// read from the repository at rev.
func renderPrompt(ctx context.Context, repo *git.Repo, rev string, p *record.Place, st *record.StageRecord, cfg *stage.Config) (string, error) {
	var src []byte
	if decl, ok := cfg.Stages[st.Name]; ok && decl.Prompt != "" {
		data, err := repo.ReadFile(ctx, rev, decl.Prompt)
		if err != nil {
			return "", fmt.Errorf("stage %s: prompt %s: %w", st.Name, decl.Prompt, err)
		}
		src = data
	} else {
		data, err := shippedPrompts.ReadFile("prompts/" + st.Prompt + ".md")
		if err != nil {
			return "", fmt.Errorf("stage %s: no shipped prompt %q", st.Name, st.Prompt)
		}
		src = data
	}
	tmpl, err := template.New(st.Name).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return "", fmt.Errorf("stage %s: prompt: %w", st.Name, err)
	}
	d := promptData{
		Place: p.ID, Kind: p.PlaceKind, Name: p.Name, Branch: p.Branch, Path: p.Path, Target: p.Target,
		Brief: p.Brief, Stage: st.Name, DeliverableText: DescribeDeliverable(st.Deliverable), Submit: cfg.Submit,
	}
	if d.Submit == "" && len(cfg.Land) > 0 {
		// The repository lands through the lander (Q): its checks prove
		// the branch on the target's tip, and it moves the target.
		d.Submit = "git flume submit " + p.ID
	}
	if r := p.Ready; r != nil && !r.OK && r.Running == nil {
		d.ReadyFailure = fmt.Sprintf("step %q exited %d", r.Step, r.Exit)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, d); err != nil {
		return "", fmt.Errorf("stage %s: prompt: %w", st.Name, err)
	}
	return strings.TrimSpace(b.String()), nil
}

// PromptNotes are what a stage's prompt says after its own text: the
// standing orders; how to delegate, when its role delegates; how a
// delegated place ends its turn; and what the stage's last run, the last
// round or its commissioner left for this run.
func PromptNotes(p *record.Place, st *record.StageRecord, role *stage.Role) string {
	var b strings.Builder
	b.WriteString("\n\n" + agent.StandingOrders)
	if role != nil && len(role.DelegatesTo) > 0 {
		fmt.Fprintf(&b, "\n\nYou may delegate part of this work to a place of its own, of kind %s: run "+
			"`git flume launch --kind KIND --brief 'WHAT IT IS TO DO'` from your place. One delegation is open at a time. "+
			"`git flume wait CHILD` returns once it is finished or blocked; then resolve it with `git flume accept CHILD` "+
			"(its commits join your branch), `git flume reopen CHILD --why 'REASON'`, `git flume unblock CHILD --with 'TEXT'`, "+
			"or `git flume rollback --delegation CHILD` (its work and your work tree back as they were before you delegated).",
			strings.Join(role.DelegatesTo, ", "))
	}
	if d := p.Parent; d != nil {
		fmt.Fprintf(&b, "\n\nThis place was delegated by %s: your work joins its branch when it accepts it. "+
			"End your turn with this stage's deliverable in git (finished), or with a line starting with NEEDS: (blocked). "+
			"If you need a fresh session instead, end your turn with a line starting with RECREATE: and the message the fresh session is to start from.",
			d.Parent)
	}
	if st.Followup != "" {
		b.WriteString("\n\n" + st.Followup)
	}
	return b.String()
}
