package guard

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/git-flume/git-flume/refs"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/record"
)

// GuardInput is what the guard reads of Claude Code's PreToolUse payload.
type GuardInput struct {
	ToolName  string         `json:"tool_name"`
	ToolInput map[string]any `json:"tool_input"`
	Cwd       string         `json:"cwd"`
}

// patchFile is a file an apply_patch patch adds, updates, deletes or
// moves to.
var patchFile = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$`)
})

// FromCodex is a Codex PreToolUse payload as the guard judges it (issue
// 27, point 2): Codex names its shell tool Bash, as Claude Code does, and
// its file edits apply_patch, whose files are named inside the patch. An
// apply_patch is judged as an Edit of each file it names, so a role's
// tools (Edit) and path rules hold for Codex as for Claude Code.
func (in GuardInput) FromCodex() []GuardInput {
	if in.ToolName != "apply_patch" {
		return []GuardInput{in}
	}
	var patch string
	for _, v := range in.ToolInput {
		if s, ok := v.(string); ok {
			patch += s + "\n"
		}
	}
	files := patchFile().FindAllStringSubmatch(patch, -1)
	if len(files) == 0 {
		return []GuardInput{{ToolName: "Edit", ToolInput: map[string]any{}, Cwd: in.Cwd}}
	}
	out := make([]GuardInput, 0, len(files))
	for _, f := range files {
		out = append(out, GuardInput{ToolName: "Edit", ToolInput: map[string]any{"file_path": strings.TrimSpace(f[1])}, Cwd: in.Cwd})
	}
	return out
}

// GuardRefusal is a tool use the guard refused, with the rule (A9).
type GuardRefusal struct{ Reason string }

func (e *GuardRefusal) Error() string { return "git flume guard: " + e.Reason }

// writeTools are the tools that write the file they name.
var writeTools = []string{"Write", "Edit", "MultiEdit", "NotebookEdit"}

// toolOp is the path operation of a tool (A9): Write writes, the editing
// tools edit, any other tool that names a path reads it.
func toolOp(tool string) string {
	switch tool {
	case "Write":
		return stage.OpWrite
	case "Edit", "MultiEdit", "NotebookEdit":
		return stage.OpEdit
	}
	return stage.OpRead
}

// GuardPayload judges what one hook payload asks (A9): one tool use, or,
// for Codex's (codex), each file its apply_patch names as an Edit; the
// first refused refuses it. A use with no working directory is judged
// from the current one.
func GuardPayload(ctx context.Context, env *stage.Env, id string, in GuardInput, codex bool) error {
	uses := []GuardInput{in}
	if codex {
		uses = in.FromCodex()
	}
	for _, use := range uses {
		dir := use.Cwd
		if dir == "" {
			dir = "."
		}
		if err := Guard(ctx, env, dir, id, use); err != nil {
			return err
		}
	}
	return nil
}

// Guard judges one tool use of a place's agent before it happens (A9): a
// tool outside the stage role's tools, a write outside the place, or a
// path a role's restriction denies (first matching rule wins) is refused
// with the rule named.
func Guard(ctx context.Context, env *stage.Env, repoDir, id string, in GuardInput) error {
	repo, store, err := env.Open(ctx, repoDir)
	if err != nil {
		return err
	}
	_, p, err := record.ReadPlace(ctx, store, id)
	if err != nil {
		return err
	}
	var role *stage.Role
	if p.Current < len(p.Stages) {
		st := p.Stages[p.Current]
		if st.Role != "" {
			if role, err = stage.LoadRole(ctx, repo, p.ConfigRev(), st.Role); err != nil {
				return err
			}
			if !role.AllowsTool(in.ToolName) {
				return &GuardRefusal{Reason: fmt.Sprintf("tool %s is not among role %s's tools (%s)", in.ToolName, role.Name, strings.Join(role.Tools, ", "))}
			}
		}
	}
	if cmd, _ := in.ToolInput["command"].(string); strings.Contains(cmd, refs.ClaimPrefix) {
		// R8: a claim is not unlocked by whoever it locks out; a claim is
		// read with git flume status, and moved only by use and release.
		return &GuardRefusal{Reason: fmt.Sprintf("%s names %s (rule: claims move only through git flume use and release, never by hand)", in.ToolName, refs.ClaimPrefix)}
	}
	var path string
	for _, k := range []string{"file_path", "notebook_path", "path"} {
		if s, ok := in.ToolInput[k].(string); ok && s != "" {
			path = s
			break
		}
	}
	if path == "" {
		return nil
	}
	if !filepath.IsAbs(path) {
		base := in.Cwd
		if base == "" {
			base = p.Path
		}
		path = filepath.Join(base, path)
	}
	path = filepath.Clean(path)
	rel, err := filepath.Rel(p.Path, path)
	inside := err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	if !inside {
		if slices.Contains(writeTools, in.ToolName) {
			return &GuardRefusal{Reason: fmt.Sprintf("%s would write %s, outside the place %s (rule: writes stay inside the place)", in.ToolName, path, p.Path)}
		}
		return nil
	}
	if role != nil {
		if ok, rule := role.Allows(rel, toolOp(in.ToolName)); !ok {
			return &GuardRefusal{Reason: fmt.Sprintf("%s of %s is denied by rule %q of role %s", in.ToolName, rel, rule.String(), role.Name)}
		}
	}
	return nil
}
