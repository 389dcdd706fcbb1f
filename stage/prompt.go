package stage

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"strings"
	"text/template"

	"github.com/git-flume/git-flume/internal/git"
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
	case d == DeliverCommit:
		return "a new commit on the branch"
	case d == DeliverTasks:
		return "every task in tasks.md is ticked and committed"
	case d == DeliverLanded:
		return "the branch has landed on its target"
	case d == DeliverChange:
		return "an OpenSpec change committed under openspec/changes/<name>/ with proposal.md and tasks.md"
	case strings.HasPrefix(d, deliverFile):
		return strings.TrimPrefix(d, deliverFile) + " exists"
	}
	return d
}

// renderPrompt renders the stage's prompt: a shipped one, or a declared one
// read from the repository at rev.
func renderPrompt(ctx context.Context, repo *git.Repo, rev string, p *Place, st *StageRecord, cfg *Config) (string, error) {
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
	if r := p.Ready; r != nil && !r.OK && r.Running == nil {
		d.ReadyFailure = fmt.Sprintf("step %q exited %d", r.Step, r.Exit)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, d); err != nil {
		return "", fmt.Errorf("stage %s: prompt: %w", st.Name, err)
	}
	return strings.TrimSpace(b.String()), nil
}
