package radar

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/git-flume/git-flume/internal/git"
	"github.com/git-flume/git-flume/stage/record"
)

// TestLandOrderLandsTheIndependentFirst: a place that conflicts with its
// target lands last, a finished place before an unfinished one, fewer
// overlaps before more; places with nothing to land are left out.
func TestLandOrderLandsTheIndependentFirst(t *testing.T) {
	place := func(id string, toLand int, finished bool) openPlace {
		return openPlace{p: Seen{ID: id}, toLand: toLand, finished: finished}
	}
	places := []openPlace{place("a", 1, false), place("b", 1, true), place("c", 2, false), place("d", 1, true), place("e", 0, true)}
	conflicts := []record.Conflict{
		{Place: "a", With: "c", Files: []string{"x"}}, {Place: "c", With: "a", Files: []string{"x"}},
		{Place: "c", With: "d", Files: []string{"y", "z"}}, {Place: "d", With: "c", Files: []string{"y", "z"}},
		{Place: "b", With: "target main", Files: []string{"w"}},
	}
	var got []string
	for _, s := range landOrder(places, conflicts) {
		got = append(got, s.Place)
	}
	// d (finished, one overlap of 2 files) ties a (unfinished) on overlaps
	// but is finished; then a; then c (now conflicting with nothing left);
	// b last: it conflicts with its target.
	if strings.Join(got, " ") != "d a c b" {
		t.Fatalf("order %v, want d a c b", got)
	}
	steps := landOrder(places, conflicts)
	if !strings.Contains(steps[0].Why, "conflicts with c (y, z)") || !strings.Contains(steps[3].Why, "conflicts with its target main in w") {
		t.Fatalf("why: %q / %q", steps[0].Why, steps[3].Why)
	}
}

// TestCachedConflictsAgreeWithEveryPair: status matches the
// cache's conflicting pairs to places by their tips instead of trying
// every pair; it finds exactly what trying every pair against the same
// cache finds, places at one tip and a place whose tip is another's
// target included.
func TestCachedConflictsAgreeWithEveryPair(t *testing.T) {
	place := func(id, tip, target string) openPlace {
		return openPlace{p: Seen{ID: id, Target: "main"}, local: true, here: true, head: tip, tip: tip, target: target, toLand: 1}
	}
	open := []openPlace{
		place("a", "t1", "m"), place("b", "t2", "m"), place("c", "t2", "m"), place("d", "t3", "m"),
		place("e", "t4", "t1"), place("f", "m", "m"),
	}
	known := map[string][]string{
		"t1:t2": {"x"}, "m:t3": {"y"}, "t1:t4": {"z"}, "t2:t3": nil, "t3:t4": {"w"},
	}
	want := map[string][]record.Conflict{}
	all, err := pairConflicts(open, "", func(a, b string) ([]string, bool, error) {
		files, ok := known[min(a, b)+":"+max(a, b)]
		return files, ok, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		want[c.Place] = append(want[c.Place], c)
	}
	got := cachedConflicts(open, known)
	norm := func(m map[string][]record.Conflict) string {
		var lines []string
		for _, cs := range m {
			for _, c := range cs {
				lines = append(lines, c.Place+">"+c.With+":"+strings.Join(c.Files, ","))
			}
		}
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	}
	if norm(got) != norm(want) {
		t.Errorf("by tips:\n%s\nevery pair:\n%s", norm(got), norm(want))
	}
	if norm(want) == "" {
		t.Fatal("the case finds no conflict at all")
	}
}

// TestPairedAnswersKeepThoseOfConflictingHeads: the answers kept beside
// the cache are those whose head is a tip of a conflicting pair, and
// only those.
func TestPairedAnswersKeepThoseOfConflictingHeads(t *testing.T) {
	a, b, c, main := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40), strings.Repeat("f", 40)
	graph := map[string]graphAnswer{
		a + " " + main: {Base: main, Ahead: 1},
		b + " " + main: {Base: main, Ahead: 0},
		c + " " + main: {Base: main, Ahead: 2},
	}
	got := pairedAnswers(graph, map[string][]string{a + ":" + b: {"f.txt"}})
	if len(got) != 2 || got[a+" "+main] != graph[a+" "+main] || got[b+" "+main] != graph[b+" "+main] {
		t.Fatalf("kept %v, want the answers of %s and %s only", got, a[:7], b[:7])
	}
}

// TestMarkLandedTrustsAPairedFileNewerThanTheGraph: a paired head whose
// answer the paired file lacks is not looked for in the whole graph when
// the file was written after it (its target moved since, by a landing:
// the graph lacks it too, and reading it cost explain 40 ms at 10,000
// places); when the file is older, the graph is read.
func TestMarkLandedTrustsAPairedFileNewerThanTheGraph(t *testing.T) {
	a, b, main := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("f", 40)
	repo := &git.Repo{CommonDir: t.TempDir()}
	if err := os.MkdirAll(filepath.Dir(mergeCachePath(repo)), 0o755); err != nil {
		t.Fatal(err)
	}
	// The graph answers that a has nothing to land on main; the paired
	// file has no answer for a.
	graph, _ := json.Marshal(mergeCache{Graph: map[string]graphAnswer{a + " " + main: {Base: main, Ahead: 0}}})
	known := map[string][]string{a + ":" + b: {"f.txt"}}
	for _, c := range []struct {
		name        string
		pairedFirst bool
		toLand      int
	}{
		{"paired file newer: the graph is not read", false, 1},
		{"paired file older: the graph is read", true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := []string{mergeCachePath(repo), pairedGraphPath(repo)}
			texts := [][]byte{graph, []byte("{}")}
			if c.pairedFirst {
				files[0], files[1], texts[0], texts[1] = files[1], files[0], texts[1], texts[0]
			}
			for i, f := range files {
				if err := os.WriteFile(f, texts[i], 0o644); err != nil {
					t.Fatal(err)
				}
				when := time.Now().Add(time.Duration(i-2) * time.Minute)
				if err := os.Chtimes(f, when, when); err != nil {
					t.Fatal(err)
				}
			}
			open := []openPlace{{p: Seen{ID: "fix--a"}, local: true, head: a, tip: a, target: main}}
			markLanded(repo, open, known)
			if open[0].toLand != c.toLand {
				t.Errorf("toLand %d, want %d", open[0].toLand, c.toLand)
			}
		})
	}
}
