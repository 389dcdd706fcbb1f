package request_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/promote/request"
)

// requestWorkspace makes a workspace with two repositories and an input
// file, and returns its root and a valid request over it.
func requestWorkspace(t *testing.T) (string, map[string]any) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"service", "client"} {
		if out, err := exec.Command("git", "init", "-q", filepath.Join(root, name)).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	os.WriteFile(filepath.Join(root, "contract.txt"), []byte("the contract\n"), 0o644)
	req := map[string]any{
		"mode": "isolated", "id": "change-contract", "goal": "Change both sides.",
		"repositories": map[string]any{"service": filepath.Join(root, "service"), "client": filepath.Join(root, "client")},
		"tasks": []any{map[string]any{
			"id": "change", "kind": "changeset", "role": "implementer", "modelClass": "balanced",
			"requirements": "Change and test both sides.", "deliverable": "Clean committed candidates.",
			"dependsOn": []any{}, "contextFrom": []any{},
			"inputs": map[string]any{"contract": filepath.Join(root, "contract.txt")},
			"checks": []any{
				map[string]any{"repository": "service", "command": "make", "args": []any{"test"}},
				map[string]any{"repository": "client", "command": "make", "args": []any{"test"}},
			},
		}},
		"finalChecks": []any{
			map[string]any{"repository": "service", "command": "make", "args": []any{"test"}},
			map[string]any{"repository": "client", "command": "make", "args": []any{"test"}},
		},
	}
	return root, req
}

func task(req map[string]any) map[string]any { return req["tasks"].([]any)[0].(map[string]any) }

// direct makes the request direct work: the change task without checks,
// then a text task that reads what it did; edit changes the first task.
func direct(edit func(t map[string]any)) func(*testing.T, string, map[string]any) []string {
	return func(_ *testing.T, _ string, r map[string]any) []string {
		r["mode"] = "direct"
		delete(r, "finalChecks")
		first := task(r)
		delete(first, "checks")
		if edit != nil {
			edit(first)
		}
		r["tasks"] = append(r["tasks"].([]any), map[string]any{"id": "answer", "kind": "text", "requirements": "Say what changed.",
			"deliverable": "An answer.", "dependsOn": []any{"change"}, "contextFrom": []any{"change"}})
		return nil
	}
}

func TestRequestValidation_P1_P2(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, root string, req map[string]any) []string // returns extra environment
		field  string
		rule   string
	}{
		{"valid", func(*testing.T, string, map[string]any) []string { return nil }, "", ""},
		{"unknown field", func(_ *testing.T, _ string, r map[string]any) []string { r["judgment"] = true; return nil }, "request", `unknown field "judgment"`},
		{"git override in the environment", func(*testing.T, string, map[string]any) []string { return []string{"GIT_DIR=/x"} }, "environment", "GIT_DIR is set"},
		{"mode", func(_ *testing.T, _ string, r map[string]any) []string { r["mode"] = "parallel"; return nil }, "mode", `"isolated" (checked work`},
		{"paths", func(_ *testing.T, _ string, r map[string]any) []string { task(r)["paths"] = []any{"src"}; return nil }, "tasks[0].paths", "not supported"},
		// Direct work (seed 001): the same selected set for every task, no
		// checked integration.
		{"direct: valid", direct(nil), "", ""},
		{"direct: final checks", func(t *testing.T, root string, r map[string]any) []string {
			direct(nil)(t, root, r)
			r["finalChecks"] = []any{map[string]any{"repository": "service", "command": "make"}}
			return nil
		}, "finalChecks", "no checked integration"},
		{"direct: task checks", direct(func(t map[string]any) {
			t["checks"] = []any{map[string]any{"repository": "service", "command": "make"}}
		}), "tasks[0].checks", "runs no checks"},
		{"direct: paths", direct(func(t map[string]any) { t["paths"] = []any{"src"} }), "tasks[0].paths", "direct selection rejects paths"},
		{"direct: continueFrom", direct(func(t map[string]any) { t["continueFrom"] = "earlier" }), "tasks[0].continueFrom", "rejects continueFrom"},
		{"direct: unknown kind", direct(func(t map[string]any) { t["kind"] = "judgment" }), "tasks[0].kind", `"changeset"`},
		{"direct: depends on a later task", direct(func(t map[string]any) { t["dependsOn"] = []any{"answer"} }), "tasks[0].dependsOn", `"answer" is not an earlier task`},
		{"direct: context from a later task", direct(func(t map[string]any) { t["contextFrom"] = []any{"answer"} }), "tasks[0].contextFrom", `"answer" is not an earlier task`},
		{"direct: two tasks of one id", func(t *testing.T, root string, r map[string]any) []string {
			direct(nil)(t, root, r)
			r["tasks"].([]any)[1].(map[string]any)["id"] = "change"
			return nil
		}, "tasks[1].id", `"change" names two tasks`},
		{"bad id", func(_ *testing.T, _ string, r map[string]any) []string { r["id"] = "A B"; return nil }, "id", "invalid id"},
		{"no goal", func(_ *testing.T, _ string, r map[string]any) []string { r["goal"] = " "; return nil }, "goal", "required"},
		{"no repositories", func(_ *testing.T, _ string, r map[string]any) []string {
			r["repositories"] = map[string]any{}
			return nil
		}, "repositories", "select 1 to 8"},
		{"nine repositories", func(t *testing.T, root string, r map[string]any) []string {
			repos := map[string]any{}
			for i := range 9 {
				p := filepath.Join(root, fmt.Sprintf("r%d", i))
				exec.Command("git", "init", "-q", p).Run()
				repos[fmt.Sprintf("r%d", i)] = p
			}
			r["repositories"] = repos
			return nil
		}, "repositories", "select 1 to 8 repositories, got 9"},
		{"relative path", func(_ *testing.T, _ string, r map[string]any) []string {
			r["repositories"].(map[string]any)["client"] = "client"
			return nil
		}, "repositories.client", "not an absolute path"},
		{"alias (symlink)", func(_ *testing.T, root string, r map[string]any) []string {
			os.Symlink(filepath.Join(root, "client"), filepath.Join(root, "alias"))
			r["repositories"].(map[string]any)["client"] = filepath.Join(root, "alias")
			return nil
		}, "repositories.client", "is an alias of"},
		{"not canonical", func(_ *testing.T, root string, r map[string]any) []string {
			r["repositories"].(map[string]any)["client"] = root + "/./client"
			return nil
		}, "repositories.client", "not canonical"},
		{"not a direct child", func(_ *testing.T, root string, r map[string]any) []string {
			p := filepath.Join(root, "deep", "client")
			exec.Command("git", "init", "-q", p).Run()
			r["repositories"].(map[string]any)["client"] = p
			return nil
		}, "repositories.client", "not a direct child"},
		{"no .git", func(_ *testing.T, root string, r map[string]any) []string {
			os.MkdirAll(filepath.Join(root, "plain"), 0o755)
			r["repositories"].(map[string]any)["client"] = filepath.Join(root, "plain")
			return nil
		}, "repositories.client", "has no .git directory"},
		{"linked worktree", func(t *testing.T, root string, r map[string]any) []string {
			svc := filepath.Join(root, "service")
			exec.Command("git", "-C", svc, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "x").Run()
			if out, err := exec.Command("git", "-C", svc, "worktree", "add", "-q", filepath.Join(root, "linked")).CombinedOutput(); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			r["repositories"].(map[string]any)["client"] = filepath.Join(root, "linked")
			return nil
		}, "repositories.client", "is a linked worktree"},
		{"submodules", func(_ *testing.T, root string, r map[string]any) []string {
			os.WriteFile(filepath.Join(root, "client", ".gitmodules"), []byte("[submodule \"x\"]\n"), 0o644)
			return nil
		}, "repositories.client", "has submodules"},
		{"workspace inside a repository (nested)", func(t *testing.T, root string, r map[string]any) []string {
			exec.Command("git", "init", "-q", root).Run()
			return nil
		}, "workspace", "inside a git repository"},
		{"two tasks", func(_ *testing.T, _ string, r map[string]any) []string {
			r["tasks"] = append(r["tasks"].([]any), task(r))
			return nil
		}, "tasks", "exactly one changeset task, got 2"},
		{"text task", func(_ *testing.T, _ string, r map[string]any) []string { task(r)["kind"] = "text"; return nil }, "tasks[0].kind", `only "changeset"`},
		{"dependencies", func(_ *testing.T, _ string, r map[string]any) []string {
			task(r)["dependsOn"] = []any{"other"}
			return nil
		}, "tasks[0].dependsOn", "not supported"},
		{"no requirements", func(_ *testing.T, _ string, r map[string]any) []string { task(r)["requirements"] = ""; return nil }, "tasks[0].requirements", "required"},
		{"no deliverable", func(_ *testing.T, _ string, r map[string]any) []string { task(r)["deliverable"] = ""; return nil }, "tasks[0].deliverable", "required"},
		{"input is a directory", func(_ *testing.T, root string, r map[string]any) []string {
			os.MkdirAll(filepath.Join(root, "dir"), 0o755)
			task(r)["inputs"] = map[string]any{"d": filepath.Join(root, "dir")}
			return nil
		}, "tasks[0].inputs.d", "not a regular file"},
		{"input is a symlink", func(_ *testing.T, root string, r map[string]any) []string {
			os.Symlink(filepath.Join(root, "contract.txt"), filepath.Join(root, "link.txt"))
			task(r)["inputs"] = map[string]any{"l": filepath.Join(root, "link.txt")}
			return nil
		}, "tasks[0].inputs.l", "is a symlink"},
		{"input inside a repository", func(_ *testing.T, root string, r map[string]any) []string {
			os.WriteFile(filepath.Join(root, "client", "in.txt"), []byte("x"), 0o644)
			task(r)["inputs"] = map[string]any{"i": filepath.Join(root, "client", "in.txt")}
			return nil
		}, "tasks[0].inputs.i", "inside the repository"},
		{"input outside the workspace", func(t *testing.T, _ string, r map[string]any) []string {
			p := filepath.Join(t.TempDir(), "out.txt")
			os.WriteFile(p, []byte("x"), 0o644)
			p, _ = filepath.EvalSymlinks(p)
			task(r)["inputs"] = map[string]any{"o": p}
			return nil
		}, "tasks[0].inputs.o", "outside the workspace"},
		{"input too large", func(_ *testing.T, root string, r map[string]any) []string {
			os.WriteFile(filepath.Join(root, "big.txt"), make([]byte, 64<<10+1), 0o644)
			task(r)["inputs"] = map[string]any{"b": filepath.Join(root, "big.txt")}
			return nil
		}, "tasks[0].inputs.b", "at most 65536"},
		{"nine inputs", func(_ *testing.T, root string, r map[string]any) []string {
			in := map[string]any{}
			for i := range 9 {
				p := filepath.Join(root, fmt.Sprintf("in%d.txt", i))
				os.WriteFile(p, []byte("x"), 0o644)
				in[fmt.Sprintf("in%d", i)] = p
			}
			task(r)["inputs"] = in
			return nil
		}, "tasks[0].inputs", "at most 8 inputs, got 9"},
		{"a repository without task checks", func(_ *testing.T, _ string, r map[string]any) []string {
			task(r)["checks"] = task(r)["checks"].([]any)[:1]
			return nil
		}, "tasks[0].checks", `repository "client" has no check`},
		{"a check on an unselected repository", func(_ *testing.T, _ string, r map[string]any) []string {
			task(r)["checks"] = append(task(r)["checks"].([]any), map[string]any{"repository": "other", "command": "make"})
			return nil
		}, "tasks[0].checks[2].repository", `"other" is not a selected repository`},
		{"a repository without final checks", func(_ *testing.T, _ string, r map[string]any) []string {
			r["finalChecks"] = r["finalChecks"].([]any)[1:]
			return nil
		}, "finalChecks", `repository "service" has no check`},
		{"33 final checks", func(_ *testing.T, _ string, r map[string]any) []string {
			var fc []any
			for range 33 {
				fc = append(fc, map[string]any{"repository": "service", "command": "make"})
			}
			r["finalChecks"] = fc
			return nil
		}, "finalChecks", "at most 32 entries, got 33"},
		{"check without a command", func(_ *testing.T, _ string, r map[string]any) []string {
			r["finalChecks"].([]any)[0].(map[string]any)["command"] = ""
			return nil
		}, "finalChecks[0].command", "required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, req := requestWorkspace(t)
			env := append([]string{"PATH=/bin"}, c.change(t, root, req)...)
			data, _ := json.Marshal(req)
			r, err := request.ParseRequest(data, root, env)
			if c.field == "" {
				if err != nil || r.ID != "change-contract" || len(r.Repositories) != 2 {
					t.Fatalf("valid request refused: %v", err)
				}
				return
			}
			var inv *request.InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("got %v, want an InvalidError for %s", err, c.field)
			}
			if inv.Field != c.field || !strings.Contains(inv.Rule, c.rule) {
				t.Fatalf("got %q: %q; want %q: …%q…", inv.Field, inv.Rule, c.field, c.rule)
			}
		})
	}
}
