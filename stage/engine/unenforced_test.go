package engine

import (
	"strings"
	"testing"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/stage"
)

// TestUnenforcedRoleLimits_A9: a role that limits tools or paths runs only
// under a program that runs flume's guard; any other is refused, saying
// why, and a role with no limits runs anywhere.
func TestUnenforcedRoleLimits_A9(t *testing.T) {
	limited := &stage.Role{Name: "r", Tools: []string{"Read"}}
	paths := &stage.Role{Name: "r", PathRestrictions: []stage.PathRule{{Deny: "secrets/**"}}}
	free := &stage.Role{Name: "r", DelegatesTo: []string{"fix"}}
	declared := func(cmd ...string) agent.Program { return agent.Program{Name: "mine", Command: cmd} }
	for _, c := range []struct {
		name    string
		role    *stage.Role
		prog    agent.Program
		guard   string
		refused bool
	}{
		{"no role", nil, agent.Builtin["codex"], "g", false},
		{"a role without limits", free, agent.Builtin["pi"], "g", false},
		{"claude with the guard", limited, agent.Builtin["claude"], "g", false},
		{"claude without a guard command", limited, agent.Builtin["claude"], "", true},
		{"codex: its guard hook", limited, agent.Builtin["codex"], "g", false},
		{"codex without a guard command", limited, agent.Builtin["codex"], "", true},
		{"pi, path limits: its guard extension", paths, agent.Builtin["pi"], "g", false},
		{"codex, path limits: its guard hook", paths, agent.Builtin["codex"], "g", false},
		{"a declared program named codex is not Codex", limited, agent.Program{Name: "codex", Command: []string{"my-codex", "{prompt}"}}, "g", true},
		{"a declared command naming {settings}", limited, declared("x", "--settings", "{settings}", "{prompt}"), "g", false},
		{"a declared command without it", limited, declared("x", "{prompt}"), "g", true},
		{"a declared program named claude is not Claude Code", limited, agent.Program{Name: "claude", Command: []string{"my-claude", "{prompt}"}}, "g", true},
	} {
		why := unenforced(c.role, c.prog, c.guard, "")
		if (why != "") != c.refused {
			t.Errorf("%s: unenforced = %q, want refused %v", c.name, why, c.refused)
		}
		// A12: path limits need the sandbox too; tools alone do not.
		unheld := unenforced(c.role, c.prog, c.guard, "a sandbox (no landlock)")
		if wantRefused := c.refused || c.role != nil && len(c.role.PathRestrictions) > 0; (unheld != "") != wantRefused {
			t.Errorf("%s without a sandbox: unenforced = %q, want refused %v", c.name, unheld, wantRefused)
		}
		if c.refused && !strings.Contains(why, c.prog.Name+" cannot be held to them") {
			t.Errorf("%s: reason %q does not name the program", c.name, why)
		}
	}
}
