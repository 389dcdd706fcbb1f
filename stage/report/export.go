package report

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"html/template"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/cost"
	"github.com/git-flume/git-flume/stage/record"
)

//go:embed export.html.tmpl
var exportText string

// exportPage is parsed when first used, not at every command's start.
var exportPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("export").Parse(exportText))
})

// Entry is one readable line of a transcript: who spoke, or which tool
// ran with what.
type Entry struct {
	Role string // user, assistant, tool, result
	Text string
}

// ExportStage is one stage as the export shows it, with each of its
// agent runs.
type ExportStage struct {
	record.StageRecord
	Index int
	Runs  []ExportRun
}

// ExportRun is one agent run of a stage: its prompt, what it cost, its
// transcript.
type ExportRun struct {
	Cost    cost.Row
	Prompt  string
	Entries []Entry
}

// ExportLink is a place linked by delegation, as the page links it: to
// the page of its own, <id>.html beside this one.
type ExportLink struct {
	ID    string
	State string // its phase and the delegation's outcome; why it is not linked
	Page  bool   // both records name each other, of one host: linked
}

// Export is the data of a place's page.
type Export struct {
	Place    *record.Place
	Parent   *ExportLink
	Children []ExportLink
	Stages   []ExportStage
	Total    cost.Row
	// TotalCost is the grand total as the cost table prints it.
	TotalCost string
}

// WriteExport writes one self-contained HTML page of a place (O4): its
// stages with their prompts, deliverables, reports and costs, and each
// agent's transcript rendered as a conversation. No script, no external
// resource.
func WriteExport(ctx context.Context, env *stage.Env, repoDir, id string, w io.Writer) error {
	_, store, err := env.Open(ctx, repoDir)
	if err != nil {
		return err
	}
	_, p, err := record.ReadPlace(ctx, store, id)
	if err != nil {
		return err
	}
	costs, err := cost.Read(ctx, env, repoDir, id)
	if err != nil {
		return err
	}
	x := Export{Place: p, Total: costs.Total, TotalCost: costs.TotalText()}
	x.Parent, x.Children = delegationLinks(ctx, store, p)
	rows := costs.Rows // one per run, in stage and run order
	for i, st := range p.Stages {
		es := ExportStage{StageRecord: st, Index: i + 1}
		for _, a := range record.StageRuns(&st) {
			var r ExportRun
			if len(rows) > 0 {
				r.Cost, rows = rows[0], rows[1:]
			}
			// The files a record names are read for this host's place
			// only: another host's record is never acted on (R5).
			if p.Host == env.Host {
				if data, err := os.ReadFile(a.PromptFile); err == nil {
					r.Prompt = string(data)
				}
				if a.Transcript != "" {
					r.Entries = withoutPrompt(readEntries(a.Transcript), r.Prompt)
				}
			}
			es.Runs = append(es.Runs, r)
		}
		x.Stages = append(x.Stages, es)
	}
	// Everything a record, a prompt or a transcript holds is shown as
	// text: the page's own markup has no control character, so each one
	// in it came from them and is written escaped (\x1b), as on a
	// terminal.
	var page strings.Builder
	if err := exportPage().Execute(&page, x); err != nil {
		return err
	}
	_, err = io.WriteString(w, term.CleanLines(page.String()))
	return err
}

// delegationLinks are p's commissioner and children, each linked to its
// page where both records name each other and are of one host, as status
// draws a child under its commissioner.
func delegationLinks(ctx context.Context, store *refs.Store, p *record.Place) (*ExportLink, []ExportLink) {
	link := func(id string, linked func(q *record.Place) bool) ExportLink {
		_, q, err := record.ReadPlace(ctx, store, id)
		switch {
		case err != nil:
			return ExportLink{ID: id, State: "its record cannot be read"}
		case q.Host != p.Host || !linked(q):
			return ExportLink{ID: id, State: "its record does not name " + p.ID}
		}
		return ExportLink{ID: id, State: q.Phase, Page: true}
	}
	var parent *ExportLink
	if p.Parent != nil {
		l := link(p.Parent.Parent, func(q *record.Place) bool { return slices.Contains(q.Children, p.ID) })
		parent = &l
	}
	var children []ExportLink
	for _, id := range p.Children {
		var outcome string
		l := link(id, func(q *record.Place) bool {
			if q.Parent == nil || q.Parent.Parent != p.ID {
				return false
			}
			outcome = q.Parent.Outcome
			return true
		})
		if outcome != "" {
			l.State += ", " + outcome
		}
		children = append(children, l)
	}
	return parent, children
}

// withoutPrompt leaves out the transcript's first user message where it is
// the prompt the page already shows above it.
func withoutPrompt(entries []Entry, prompt string) []Entry {
	for i, e := range entries {
		if e.Role == "user" {
			if strings.TrimSpace(e.Text) == strings.TrimSpace(prompt) {
				return append(entries[:i:i], entries[i+1:]...)
			}
			break
		}
	}
	return entries
}

// readEntries renders a transcript's lines readably, whatever the
// program: the text of user and assistant messages, tool calls with their
// input, tool results; anything else is left out.
func readEntries(path string) []Entry {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil || line["isSidechain"] == true {
			continue // a subagent's conversation is not the stage agent's
		}
		msg, _ := line["message"].(map[string]any)
		if msg == nil {
			msg, _ = line["payload"].(map[string]any)
		}
		if msg == nil {
			continue
		}
		role, _ := msg["role"].(string)
		if t, ok := msg["type"].(string); ok && role == "" {
			switch t {
			case "user_message":
				out = append(out, Entry{Role: "user", Text: str(msg["message"])})
			case "agent_message":
				out = append(out, Entry{Role: "assistant", Text: str(msg["message"])})
			case "function_call":
				out = append(out, Entry{Role: "tool", Text: str(msg["name"]) + " " + str(msg["arguments"])})
			}
			continue
		}
		switch c := msg["content"].(type) {
		case string:
			out = append(out, Entry{Role: roleOf(role), Text: c})
		case []any:
			for _, b := range c {
				bm, _ := b.(map[string]any)
				switch bm["type"] {
				case "text", "input_text", "output_text":
					if t := str(bm["text"]); t != "" && !strings.HasPrefix(t, "<system-reminder>") {
						out = append(out, Entry{Role: roleOf(role), Text: t})
					}
				case "tool_use", "toolCall":
					out = append(out, Entry{Role: "tool", Text: str(bm["name"]) + " " + plainJSON(firstOf(bm["input"], bm["arguments"]))})
				case "tool_result":
					out = append(out, Entry{Role: "result", Text: short(str(bm["content"]))})
				}
			}
		}
	}
	return out
}

func roleOf(role string) string {
	switch role {
	case "user", "assistant":
		return role
	case "toolResult":
		return "result"
	}
	return "assistant"
}

func firstOf(vs ...any) any {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

func str(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case nil:
		return ""
	}
	return plainJSON(v)
}

// plainJSON is v as compact JSON, with <, > and & as themselves: the page
// escapes what it shows, and a tool's input reads as the agent wrote it.
func plainJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func short(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}
