// What an agent program needs, here, before flume can start it unattended:
// found on PATH, its version, and the setup it keeps in its
// home — onboarding done, credentials, the trust of new folders. Read
// only: flume never writes another program's configuration.

package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/proc"
)

// versionWait bounds a program's --version.
const versionWait = 20 * time.Second

// Check is one thing an agent program needs here.
type Check struct {
	Name string `json:"name"`
	// Status is "ok", "warn" (it starts, but a person will be asked
	// something) or "missing" (it does not start unattended).
	Status string `json:"status"`
	// Detail says what was found, or what to do.
	Detail string `json:"detail"`
}

// Check statuses.
const (
	CheckOK      = "ok"
	CheckWarn    = "warn"
	CheckMissing = "missing"
)

// Readiness is what one agent program needs here, checked.
type Readiness struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	Path    string `json:"path"`    // "" when not on PATH
	Version string `json:"version"` // its --version's first line, "" when unknown
	// CanStart: found, and nothing missing that keeps it from starting
	// unattended.
	CanStart bool    `json:"canStart"`
	Checks   []Check `json:"checks"`
}

// installHints say how to get the programs flume knows.
var installHints = map[string]string{
	"claude": "npm install -g @anthropic-ai/claude-code",
	"codex":  "npm install -g @openai/codex",
	"pi":     "npm install -g @mariozechner/pi-coding-agent",
}

// Locate finds program p's command as an agent with environment environ
// would (A1: agents start with the caller's environment), or says it is
// not on PATH and how to get it.
func Locate(p Program, environ []string) (string, error) {
	if len(p.Command) == 0 {
		return "", fmt.Errorf("agent %s declares no command", p.Name)
	}
	path, err := proc.LookPath(p.Command[0], environ)
	if err != nil {
		how := "install it"
		if hint := installHints[p.Name]; hint != "" && p.Command[0] == p.Name {
			how = "install it: " + hint
		}
		return "", fmt.Errorf("%q of agent %s is not on PATH (%s; or pass --agent)", p.Command[0], p.Name, how)
	}
	return path, nil
}

// Ready checks what program p needs to start here unattended, for an
// agent whose environment is environ, working in folders under dir (a
// repository's places/): on PATH, its version, and its own setup.
func Ready(ctx context.Context, p Program, environ []string, dir string) Readiness {
	r := Readiness{Name: p.Name, Checks: []Check{}}
	if len(p.Command) > 0 {
		r.Command = p.Command[0]
	}
	path, err := Locate(p, environ)
	if err != nil {
		r.Checks = append(r.Checks, Check{"program", CheckMissing, err.Error()})
		return r
	}
	r.Path = path
	r.Version = version(ctx, path, environ)
	r.Checks = append(r.Checks, Check{"program", CheckOK, path})
	home := HomeOf(environ)
	switch p.Format {
	case FormatClaude:
		if r.Command == "claude" {
			r.Checks = append(r.Checks, claudeSetup(home, environ, dir)...)
		}
	case FormatCodex:
		r.Checks = append(r.Checks, codexSetup(home, environ, dir)...)
	case FormatPi:
		r.Checks = append(r.Checks, piSetup(home, environ)...)
	}
	r.CanStart = true
	for _, c := range r.Checks {
		if c.Status == CheckMissing {
			r.CanStart = false
		}
	}
	return r
}

// version is the first line a program prints for --version on standard
// output, else the first line on standard error that is not a warning
// (pi writes its version there; codex writes a warning there beside the
// version it prints on standard output); "" when it prints none
// in versionWait. A node program takes seconds to start on a loaded
// machine.
func version(ctx context.Context, path string, environ []string) string {
	ctx, cancel := context.WithTimeout(ctx, versionWait)
	defer cancel()
	var out, errOut strings.Builder
	if err := proc.Run(ctx, proc.Cmd{Path: path, Args: []string{"--version"}, Env: environ, Stdout: &out, Stderr: &errOut}); err != nil {
		return ""
	}
	if line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n"); line != "" {
		return line
	}
	for line := range strings.Lines(errOut.String()) {
		line = strings.TrimSpace(line)
		low := strings.ToLower(line)
		if line != "" && !strings.HasPrefix(low, "warning") && !strings.HasPrefix(low, "error") {
			return line
		}
	}
	return ""
}

func lookup(environ []string, name string) string {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// claudeSetup reads ~/.claude.json as Claude Code keeps it: without
// onboarding done it exits when it cannot reach its service; a key from
// the environment is asked about once (the default answer is No); a new
// folder asks for trust. flume blocks a stage on a dialog and never
// answers it: `git flume attach` is how a person does.
func claudeSetup(home string, environ []string, dir string) []Check {
	var cfg struct {
		Onboarded bool `json:"hasCompletedOnboarding"`
		Keys      struct {
			Approved []string `json:"approved"`
		} `json:"customApiKeyResponses"`
		Projects map[string]struct {
			Trusted bool `json:"hasTrustDialogAccepted"`
		} `json:"projects"`
	}
	file := filepath.Join(home, ".claude.json")
	data, err := os.ReadFile(file)
	if err == nil {
		err = json.Unmarshal(data, &cfg)
	}
	var checks []Check
	switch {
	case err != nil && !os.IsNotExist(err):
		checks = append(checks, Check{"onboarding", CheckMissing, fmt.Sprintf("%s does not read: %v", file, err)})
	case !cfg.Onboarded:
		checks = append(checks, Check{"onboarding", CheckMissing, "run claude once and finish its setup (or set hasCompletedOnboarding in " + file + "); without it claude exits when it cannot reach its service"})
	default:
		checks = append(checks, Check{"onboarding", CheckOK, "done"})
	}
	key := lookup(environ, "ANTHROPIC_API_KEY")
	creds := filepath.Join(home, ".claude", ".credentials.json")
	switch _, err := os.Stat(creds); {
	case key != "":
		approved := false
		for _, a := range cfg.Keys.Approved {
			if a == key || len(key) >= 20 && a == key[len(key)-20:] {
				approved = true
			}
		}
		if approved {
			checks = append(checks, Check{"credentials", CheckOK, "ANTHROPIC_API_KEY, approved"})
		} else {
			checks = append(checks, Check{"credentials", CheckWarn, "ANTHROPIC_API_KEY is set but not approved: claude asks about it once (default No); answer Yes in its pane (git flume attach) or approve it in a session of your own"})
		}
	case lookup(environ, "ANTHROPIC_AUTH_TOKEN") != "":
		checks = append(checks, Check{"credentials", CheckOK, "ANTHROPIC_AUTH_TOKEN"})
	case err == nil:
		checks = append(checks, Check{"credentials", CheckOK, creds})
	default:
		checks = append(checks, Check{"credentials", CheckMissing, "no login: run claude and /login, or set ANTHROPIC_API_KEY"})
	}
	checks = append(checks, trustCheck(dir, func(p string) bool { return cfg.Projects[p].Trusted }, "claude asks to trust each new place (answer it with git flume attach), unless "+dir+" or a folder above it is trusted in "+file))
	return append(checks, claudeTools(home, filepath.Dir(dir)))
}

// claudeTools says whether Claude Code may use its tools unattended, from
// the permissions of its user settings and of the repository's committed
// ones (a place, a worktree of it, has them too): with neither an allow
// list nor a mode that allows, it asks before its first Bash call, and the
// stage blocks there until someone answers in its pane. A role's tools:
// (.flume/roles/<role>.md) are given to the run alone as --allowedTools,
// which is how to allow them for places and nowhere else.
func claudeTools(home, repo string) Check {
	var allow []string
	mode := ""
	for _, file := range []string{filepath.Join(home, ".claude", "settings.json"), filepath.Join(repo, ".claude", "settings.json")} {
		var set struct {
			Permissions struct {
				Allow []string `json:"allow"`
				Mode  string   `json:"defaultMode"`
			} `json:"permissions"`
		}
		if data, err := os.ReadFile(file); err == nil && json.Unmarshal(data, &set) == nil {
			allow = append(allow, set.Permissions.Allow...)
			mode = cmp.Or(set.Permissions.Mode, mode)
		}
	}
	how := "allow them for places alone with a role's tools: in .flume/roles/<role>.md (given to each run as --allowedTools), or for every session in permissions.allow of " + filepath.Join(home, ".claude", "settings.json")
	switch {
	case mode == "bypassPermissions":
		return Check{"tools", CheckOK, "every tool allowed (permissions.defaultMode bypassPermissions)"}
	case slices.ContainsFunc(allow, func(a string) bool { return a == "Bash" || strings.HasPrefix(a, "Bash(") }):
		return Check{"tools", CheckOK, "allowed without asking: " + strings.Join(allow, ", ")}
	case len(allow) > 0:
		return Check{"tools", CheckWarn, "only " + strings.Join(allow, ", ") + " allowed without asking: a stage blocks at its first other tool (Bash) until answered in its pane; " + how}
	}
	return Check{"tools", CheckWarn, "no tool allowed without asking: a stage blocks at its first Bash call until answered in its pane (git flume attach); " + how}
}

// codexSetup reads $CODEX_HOME (default ~/.codex): credentials, and the
// trust of the places (an untrusted folder asks for approvals).
func codexSetup(home string, environ []string, dir string) []Check {
	codexHome := lookup(environ, "CODEX_HOME")
	if codexHome == "" {
		codexHome = filepath.Join(home, ".codex")
	}
	config, _ := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	var checks []Check
	_, authErr := os.Stat(filepath.Join(codexHome, "auth.json"))
	switch {
	case lookup(environ, "OPENAI_API_KEY") != "":
		checks = append(checks, Check{"credentials", CheckOK, "OPENAI_API_KEY"})
	case authErr == nil:
		checks = append(checks, Check{"credentials", CheckOK, filepath.Join(codexHome, "auth.json")})
	case strings.Contains(string(config), "model_provider"):
		checks = append(checks, Check{"credentials", CheckOK, "a model provider in " + filepath.Join(codexHome, "config.toml")})
	default:
		checks = append(checks, Check{"credentials", CheckMissing, "no login: run codex login, or set OPENAI_API_KEY"})
	}
	trusted := func(p string) bool {
		return strings.Contains(string(config), fmt.Sprintf("[projects.%q]", p)) || strings.Contains(string(config), "[projects.'"+p+"']")
	}
	checks = append(checks, trustCheck(dir, trusted, "codex treats each new place as untrusted unless "+dir+" or a folder above it has trust_level = \"trusted\" in "+filepath.Join(codexHome, "config.toml")))
	return checks
}

// piSetup reads ~/.pi/agent (PI_CODING_AGENT_DIR): pi shows no dialogs,
// but needs a model it can reach.
func piSetup(home string, environ []string) []Check {
	dir := lookup(environ, "PI_CODING_AGENT_DIR")
	if dir == "" {
		dir = filepath.Join(home, ".pi", "agent")
	}
	for _, f := range []string{"models.json", "auth.json", "settings.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return []Check{{"credentials", CheckOK, filepath.Join(dir, f)}}
		}
	}
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"} {
		if lookup(environ, k) != "" {
			return []Check{{"credentials", CheckOK, k}}
		}
	}
	return []Check{{"credentials", CheckMissing, "no model: run pi and log in, or set a provider's API key"}}
}

// trustCheck is ok when dir or a folder above it is trusted, else a
// warning: the program starts, and asks.
func trustCheck(dir string, trusted func(string) bool, warning string) Check {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if trusted(d) {
			return Check{"trust", CheckOK, d + " is trusted"}
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	return Check{"trust", CheckWarn, warning}
}
