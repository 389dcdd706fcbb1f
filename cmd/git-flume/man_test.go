package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestManSynopsesAgreeWithFlags: the man page shows every command's usage
// line as -h prints it (no markup read into it), and each usage line names
// exactly the command's flags: none it does not take, none it leaves out.
func TestManSynopsesAgreeWithFlags(t *testing.T) {
	var out bytes.Buffer
	a := &app{io: &streams{Out: &out, Err: &out}}
	cliApp := newApp(a)
	if err := cliApp.Run([]string{"git-flume", "man"}); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	flagWord := regexp.MustCompile(`(^|[\s\[(|])(--?[a-z][a-z-]*)`)
	var walk func(cmds []*cli.Command, parent string)
	checked := 0
	walk = func(cmds []*cli.Command, parent string) {
		for _, cmd := range cmds {
			name := parent + " " + cmd.Name
			walk(cmd.Subcommands, name)
			if cmd.UsageText == "" || cmd.Hidden {
				continue
			}
			checked++
			if !strings.Contains(page, cmd.UsageText) {
				t.Errorf("%s: the man page does not show its usage line %q as written", name, cmd.UsageText)
			}
			var takes []string
			for _, f := range cmd.Flags {
				if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
					continue // hidden: for hooks and sessions, not for people
				}
				takes = append(takes, f.Names()[0])
			}
			named := map[string]bool{}
			for _, m := range flagWord.FindAllStringSubmatch(cmd.UsageText, -1) {
				word := strings.TrimLeft(m[2], "-")
				i := slices.IndexFunc(cmd.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), word) })
				if i < 0 {
					t.Errorf("%s: its usage line names %s, which it does not take", name, m[2])
					continue
				}
				named[cmd.Flags[i].Names()[0]] = true
			}
			for _, f := range takes {
				if !named[f] {
					t.Errorf("%s: takes --%s, which its usage line leaves out", name, f)
				}
			}
		}
	}
	walk(cliApp.Commands, "git flume")
	if checked < 20 {
		t.Fatalf("checked %d usage lines; the commands were not walked", checked)
	}
}

// TestREADMENamesOnlyRealFlags: the README's command reference has a row
// for every command, and a row names no flag its command does not take.
// Its rows are shorter than -h's usage lines: they leave out
// the flags every command of a kind shares (--repo, --session, --pid).
func TestREADMENamesOnlyRealFlags(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(git flume [^`]*)`")
	var rows []string
	for _, m := range row.FindAllStringSubmatch(strings.ReplaceAll(string(readme), `\|`, "|"), -1) {
		rows = append(rows, m[1])
	}
	flagWord := regexp.MustCompile(`(^|[\s\[(|])(--?[a-z][a-z-]*)`)
	a := &app{io: &streams{Out: io.Discard, Err: io.Discard}}
	var walk func(cmds []*cli.Command, parent string)
	walk = func(cmds []*cli.Command, parent string) {
		for _, cmd := range cmds {
			name := parent + " " + cmd.Name
			walk(cmd.Subcommands, name)
			if cmd.Hidden || len(cmd.Subcommands) > 0 {
				continue
			}
			found := false
			for _, r := range rows {
				words := strings.Fields(r)
				head := strings.Join(words[:min(len(words), len(strings.Fields(name)))], " ")
				verbs := strings.Split(strings.TrimPrefix(head, parent+" "), "|")
				if head != name && !(strings.HasPrefix(head, parent+" ") && slices.Contains(verbs, cmd.Name)) {
					continue
				}
				found = true
				for _, m := range flagWord.FindAllStringSubmatch(r, -1) {
					word := strings.TrimLeft(m[2], "-")
					if !slices.ContainsFunc(cmd.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), word) }) {
						t.Errorf("README: %q names %s, which %s does not take", r, m[2], name)
					}
				}
			}
			if !found {
				t.Errorf("README has no row for %s", name)
			}
		}
	}
	walk(newApp(a).Commands, "git flume")
}
