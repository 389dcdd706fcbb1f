package main

import (
	"bytes"
	"context"
	_ "embed"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/git-flume/git-flume/internal/proc"
)

//go:embed mutations.txt
var mutationsFile string

// mutation is one clause-breaking change: the line old in file becomes
// new, and tests (package, then -run pattern, a pair a line) must fail.
type mutation struct {
	clause, what, file, old, new string
	tests                        [][2]string
}

func main() {
	list := flag.Bool("list", false, "list the changes and exit")
	flag.Parse()
	ms, err := parse(mutationsFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
	if want := flag.Args(); len(want) > 0 {
		ms = slices.DeleteFunc(ms, func(m mutation) bool { return !slices.Contains(want, m.clause) })
	}
	if *list {
		for _, m := range ms {
			fmt.Printf("%-4s %s (%s)\n", m.clause, m.what, m.file)
		}
		return
	}
	copyDir, err := copyTree()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
	defer func() { _ = os.RemoveAll(copyDir) }()
	missed, passes := 0, map[[2]string]bool{}
	for _, m := range ms {
		verdict := baseline(copyDir, m, passes)
		if verdict == "" {
			verdict = run(copyDir, m)
		}
		if verdict != "caught" {
			missed++
		}
		fmt.Printf("%-9s %-4s %s\n", verdict, m.clause, m.what)
	}
	fmt.Printf("%d of %d changes caught\n", len(ms)-missed, len(ms))
	if missed > 0 {
		os.Exit(1)
	}
}

// parse reads mutations.txt: a block a change, "## CLAUSE what it
// breaks", then "file:", "old:", "new:" and one or more "test: PACKAGE
// PATTERN" lines.
func parse(text string) ([]mutation, error) {
	var ms []mutation
	for _, block := range strings.Split(text, "\n## ")[1:] {
		lines := strings.Split(strings.TrimRight(block, "\n"), "\n")
		clause, what, _ := strings.Cut(lines[0], " ")
		m := mutation{clause: clause, what: what}
		for _, l := range lines[1:] {
			key, value, ok := strings.Cut(l, ": ")
			switch {
			case !ok || strings.HasPrefix(l, "#"):
			case key == "file":
				m.file = value
			case key == "old":
				m.old = value
			case key == "new":
				m.new = value
			case key == "test":
				pkg, pattern, _ := strings.Cut(value, " ")
				m.tests = append(m.tests, [2]string{pkg, pattern})
			}
		}
		if m.file == "" || m.old == "" || m.new == "" || len(m.tests) == 0 {
			return nil, fmt.Errorf("%s %s: want file, old, new and a test", clause, what)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// copyTree copies the files git tracks (as they are in the work tree) to
// a new temporary folder: the changes are made there, never here.
func copyTree() (string, error) {
	out, err := proc.Output(context.Background(), proc.Cmd{Path: "git", Args: []string{"ls-files", "-z"}, Env: os.Environ()})
	if err != nil {
		return "", fmt.Errorf("git ls-files: %w", err)
	}
	dir, err := os.MkdirTemp("", "flume-mutate-")
	if err != nil {
		return "", err
	}
	for _, f := range strings.Split(strings.TrimRight(out, "\x00"), "\x00") {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // deleted in the work tree
		}
		info, _ := os.Lstat(f)
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return dir, err
		}
		if err := os.WriteFile(dst, data, info.Mode().Perm()); err != nil {
			return dir, err
		}
	}
	return dir, nil
}

// baseline runs m's tests in the copy at dir as it is, once each
// (passes keeps what was run): "unsound" when one fails without the
// change, so that a failure with it says nothing; "" when all pass.
func baseline(dir string, m mutation, passes map[[2]string]bool) string {
	for _, t := range m.tests {
		ok, ran := passes[t]
		if !ran {
			_, err := goCmd(dir, "test", "-count=1", "-timeout", "4m", "-run", t[1], t[0])
			ok = err == nil
			passes[t] = ok
		}
		if !ok {
			return "unsound"
		}
	}
	return ""
}

// run makes m in the copy at dir, runs its tests, and puts the file back:
// "caught" when a test failed, "MISSED" when all passed, "stale" when
// its line is not in the file exactly once, "broken" when it does not
// build.
func run(dir string, m mutation) string {
	path := filepath.Join(dir, m.file)
	data, err := os.ReadFile(path)
	if err != nil || strings.Count(string(data), m.old+"\n") != 1 {
		return "stale"
	}
	defer func() { _ = os.WriteFile(path, data, 0o644) }() // the file as it was, for the next change
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), m.old+"\n", m.new+"\n", 1)), 0o644); err != nil {
		return "stale"
	}
	if out, err := goCmd(dir, "vet", "./"+filepath.Dir(m.file)); err != nil {
		fmt.Fprintf(os.Stderr, "%s: the change does not build:\n%s", m.clause, out)
		return "broken"
	}
	for _, t := range m.tests {
		if _, err := goCmd(dir, "test", "-count=1", "-timeout", "4m", "-run", t[1], t[0]); err != nil {
			return "caught"
		}
	}
	return "MISSED"
}

func goCmd(dir string, args ...string) ([]byte, error) {
	var out bytes.Buffer
	err := proc.Run(context.Background(), proc.Cmd{Path: "go", Args: args, Dir: dir, Env: os.Environ(), Stdout: &out, Stderr: &out})
	return out.Bytes(), err
}
