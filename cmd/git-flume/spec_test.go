package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestSpecClauseIDsResolve: every clause id the code, the scripts and the
// documents cite (R2, A10, P6, …) is defined in docs/SPEC.md, so a reader
// of a clone can look each one up.
func TestSpecClauseIDsResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	spec, err := os.ReadFile(filepath.Join(root, "docs", "SPEC.md"))
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^- ([A-Z][0-9]+[a-z]?)\. `).FindAllStringSubmatch(string(spec), -1) {
		defined[m[1]] = true
	}
	if len(defined) < 50 {
		t.Fatalf("docs/SPEC.md defines %d clauses; its clause lines are not read", len(defined))
	}
	prefixes := map[byte]bool{}
	for id := range defined {
		prefixes[id[0]] = true
	}
	var letters strings.Builder
	for p := range prefixes {
		letters.WriteByte(p)
	}
	cite := regexp.MustCompile(`\b[` + letters.String() + `][0-9]+[a-z]?\b`)
	missing := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "build") {
			return filepath.SkipDir
		}
		ext := filepath.Ext(path)
		if d.IsDir() || (ext != ".go" && ext != ".txtar" && ext != ".md") || strings.HasSuffix(path, "SPEC.md") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, id := range cite.FindAllString(string(data), -1) {
			if !defined[id] {
				missing[id] = append(missing[id], path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id := range missing {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		t.Errorf("%s is cited (%s) but docs/SPEC.md does not define it", id, strings.Join(missing[id][:min(3, len(missing[id]))], ", "))
	}
}

// TestEveryPackageHasItsDocInDocGo: each package says what it is in its
// own doc.go, named as the package is: a newcomer finds it in
// one place, and no other file carries a package comment.
func TestEveryPackageHasItsDocInDocGo(t *testing.T) {
	root := filepath.Join("..", "..")
	pkgComment := regexp.MustCompile(`(?m)^// (Package|Command) ([\w-]+) `)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); name == ".git" || name == "testdata" || name == "node_modules" {
			return filepath.SkipDir
		}
		goFiles, _ := filepath.Glob(filepath.Join(path, "*.go"))
		var sources []string
		for _, f := range goFiles {
			if !strings.HasSuffix(f, "_test.go") {
				sources = append(sources, f)
			}
		}
		if len(sources) == 0 {
			return nil
		}
		doc, err := os.ReadFile(filepath.Join(path, "doc.go"))
		if err != nil {
			t.Errorf("%s: no doc.go", path)
			return nil
		}
		m := pkgComment.FindSubmatch(doc)
		pkg := regexp.MustCompile(`(?m)^package (\w+)`).FindSubmatch(doc)
		switch {
		case m == nil || pkg == nil:
			t.Errorf("%s/doc.go: no package comment", path)
		case string(m[1]) == "Package" && string(m[2]) != string(pkg[1]):
			t.Errorf("%s/doc.go: the comment names package %s, the file is package %s", path, m[2], pkg[1])
		}
		for _, f := range sources {
			if filepath.Base(f) == "doc.go" {
				continue
			}
			if data, _ := os.ReadFile(f); pkgComment.Match(data) {
				t.Errorf("%s: a package comment outside doc.go", f)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDesignMapNamesEveryPackage: DESIGN.md's map has a line for every
// package of the module, its size within 0.1k of the package's non-test
// lines, and names no package that is gone.
func TestDesignMapNamesEveryPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	design, err := os.ReadFile(filepath.Join(root, "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(design)
	start := strings.Index(text, "## The map")
	if start < 0 {
		t.Fatal("DESIGN.md has no map section")
	}
	section := text[start:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	entry := regexp.MustCompile("(?m)^- `([\\w/-]+)` \\((\\d+\\.\\d)k\\)")
	mapped := map[string]float64{}
	for _, m := range entry.FindAllStringSubmatch(section, -1) {
		size, _ := strconv.ParseFloat(m[2], 64)
		mapped[m[1]] = size
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); name == ".git" || name == "testdata" || name == "node_modules" {
			return filepath.SkipDir
		}
		goFiles, _ := filepath.Glob(filepath.Join(path, "*.go"))
		lines := 0
		for _, f := range goFiles {
			if !strings.HasSuffix(f, "_test.go") {
				data, _ := os.ReadFile(f)
				lines += strings.Count(string(data), "\n")
			}
		}
		if lines == 0 {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		size, ok := mapped[rel]
		switch {
		case !ok:
			t.Errorf("DESIGN.md's map has no line for %s (%d lines)", rel, lines)
		case math.Abs(size-float64(lines)/1000) > 0.1:
			t.Errorf("DESIGN.md's map says %s is %.1fk lines; it is %d", rel, size, lines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range mapped {
		if !seen[pkg] {
			t.Errorf("DESIGN.md's map names %s, which is no package", pkg)
		}
	}
}

// TestNoPackageOver3kNoFunctionOver60: a package a newcomer opens holds at
// most 3,000 lines and a function at most 60, test code aside.
func TestNoPackageOver3kNoFunctionOver60(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	lines := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name := d.Name(); d.IsDir() && (name == ".git" || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		lines[filepath.Dir(path)] += fset.Position(f.End()).Line
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil {
				if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > 60 {
					t.Errorf("%s: %s is %d lines, more than 60", path, fn.Name.Name, n)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 20 {
		t.Fatalf("only %d packages found under %s: the walk is not seeing the module", len(lines), root)
	}
	design, err := os.ReadFile(filepath.Join(root, "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, near, _ := strings.Cut(string(design), "Near the limit")
	near, _, _ = strings.Cut(near, "\n\n")
	for dir, n := range lines {
		rel, _ := filepath.Rel(root, dir)
		switch {
		case n > 3000:
			t.Errorf("%s is %d lines, more than 3,000", dir, n)
		case n >= 2700 && !strings.Contains(near, "`"+filepath.ToSlash(rel)+"` ("):
			t.Errorf("%s is %d lines, within 10%% of the limit, and DESIGN.md's \"Near the limit\" does not say why", rel, n)
		}
	}
}

// TestDesignMapArrowsAreTheImports: each line of DESIGN.md's map names,
// after its arrow, exactly the packages of this module its package
// imports (a map that drifts from the code misleads the reader
// it is for), and every package folder SPEC.md's section headers name
// exists.
func TestDesignMapArrowsAreTheImports(t *testing.T) {
	root := filepath.Join("..", "..")
	design, err := os.ReadFile(filepath.Join(root, "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(design)
	section := text[strings.Index(text, "## The map"):]
	section = section[:strings.Index(section[1:], "\n## ")+1]
	entry := regexp.MustCompile("(?s)^([\\w/-]+)` \\(\\d+\\.\\dk\\) — (.*)")
	entries := strings.Split(section, "\n- `")[1:]
	if len(entries) < 20 {
		t.Fatalf("only %d map entries read", len(entries))
	}
	for _, e := range entries {
		m := entry.FindStringSubmatch(e)
		if m == nil {
			t.Errorf("DESIGN.md's map line %q does not read", e)
			continue
		}
		pkg, body := m[1], m[2]
		if i := strings.Index(body, "\n\n"); i >= 0 {
			body = body[:i] // the section's text after its last line
		}
		_, arrow, ok := strings.Cut(body, "→")
		if pkg == "cmd/git-flume" {
			continue // every package below
		}
		if !ok {
			t.Errorf("DESIGN.md's map line for %s has no arrow", pkg)
			continue
		}
		if got, want := mapArrow(arrow), moduleImports(t, root, pkg); !slices.Equal(got, want) {
			t.Errorf("DESIGN.md's map says %s imports %v; it imports %v", pkg, got, want)
		}
	}
	spec, err := os.ReadFile(filepath.Join(root, "docs", "SPEC.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?m)^## .*\\(`([\\w/-]+)/`\\)").FindAllStringSubmatch(string(spec), -1) {
		if info, err := os.Stat(filepath.Join(root, m[1])); err != nil || !info.IsDir() {
			t.Errorf("SPEC.md's header %q names %s/, which is no folder", m[0], m[1])
		}
	}
}

// mapArrow reads the packages a map line's arrow names: `a`, `b/{c,d}`;
// "nothing of this module" names none.
func mapArrow(arrow string) []string {
	var pkgs []string
	for _, m := range regexp.MustCompile("`([\\w/-]+)(?:/\\{([\\w,/-]+)\\})?`").FindAllStringSubmatch(arrow, -1) {
		if m[2] == "" {
			pkgs = append(pkgs, m[1])
			continue
		}
		for _, name := range strings.Split(m[2], ",") {
			pkgs = append(pkgs, m[1]+"/"+name)
		}
	}
	slices.Sort(pkgs)
	return slices.Compact(pkgs)
}

// moduleImports are the packages of this module that package dir (its
// non-test files) imports, relative to the module, sorted.
func moduleImports(t *testing.T, root, dir string) []string {
	t.Helper()
	const module = "github.com/git-flume/git-flume/"
	files, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
	fset := token.NewFileSet()
	var pkgs []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			if path, ok := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), module); ok {
				pkgs = append(pkgs, path)
			}
		}
	}
	slices.Sort(pkgs)
	return slices.Compact(pkgs)
}
