package report

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/words"
	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/place"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/toollog"
)

// ChildProgress is what a commissioner sees of its open delegated place:
// where its stage stands, what it asks, how long it
// has run, and its last tool calls, read from its agent's own transcript.
type ChildProgress struct {
	Place string `json:"place"`
	Stage string `json:"stage"`
	Index int    `json:"index"`
	Count int    `json:"count"`
	State string `json:"state"`
	// Role is the role the child's stage runs in, which its questions are
	// labelled with; "" when the stage names none.
	Role      string   `json:"role,omitempty"`
	Need      string   `json:"need,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	ElapsedMs int64    `json:"elapsedMs"`
	LastTools []string `json:"lastTools"`
}

// openChildProgress is the progress of p's open delegated place, nil when
// it has none. Only this host's child is read (R5), and only its record
// and its agent's transcript: nothing is written.
func openChildProgress(ctx context.Context, env *stage.Env, store *refs.Store, p *record.Place) *ChildProgress {
	if len(p.Children) == 0 {
		return nil
	}
	id, err := place.OpenChild(ctx, store, p)
	if err != nil || id == "" {
		return nil
	}
	_, c, err := record.ReadPlace(ctx, store, id)
	if err != nil || c.Host != env.Host || c.Current >= len(c.Stages) {
		return nil
	}
	st := c.Stages[c.Current]
	cp := &ChildProgress{Place: c.ID, Stage: st.Name, Index: c.Current + 1, Count: len(c.Stages), State: st.State,
		Role: st.Role, Need: st.Need, Reason: st.Reason, LastTools: []string{}}
	if st.Started != nil {
		cp.ElapsedMs = env.ClockNow().Sub(*st.Started).Milliseconds()
	}
	cp.LastTools = toollog.LastTools(&st, toollog.ChildTools)
	return cp
}

// Text is the child's progress in one line, for explain.
func (c *ChildProgress) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: stage %s (%d/%d) %s for %s", c.Place, c.Stage, c.Index, c.Count, c.State,
		(time.Duration(c.ElapsedMs) * time.Millisecond).Round(time.Second))
	if c.Need != "" {
		fmt.Fprintf(&b, "; %s: %s", c.Asks(), words.OneLine(c.Need))
	} else if c.Reason != "" {
		fmt.Fprintf(&b, "; %s", words.OneLine(c.Reason))
	}
	if len(c.LastTools) > 0 {
		fmt.Fprintf(&b, "; last tool calls: %s", strings.Join(c.LastTools, " | "))
	}
	return b.String()
}

// Asks is how the child's question is introduced, labelled with the role
// it asks in: "its implementer asks", or "it asks".
func (c *ChildProgress) Asks() string {
	return roleAsks(c.Role)
}

// roleAsks introduces a delegated place's question with its role.
func roleAsks(role string) string {
	if role == "" {
		return "it asks"
	}
	return "its " + role + " asks"
}
