package board

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/report"
)

// TestBoardSoundsOnceAndParsesKeys: a row sounds when it starts to need a
// person, not again while it still does, and again after it did not; each
// key becomes the git flume command of its name in the row's repository;
// a wrong key, row or missing word says what was expected.
func TestBoardSoundsOnceAndParsesKeys(t *testing.T) {
	row := func(n int, place, state string) Row {
		return Row{N: n, Repo: "/r", Place: place, State: state}
	}
	first := []Row{row(1, "fix--a", "waiting"), row(2, "fix--b", "working")}
	if got := Sounding(nil, first); !slices.Equal(got, []int{1}) {
		t.Fatalf("first look sounds %v", got)
	}
	// fix--b moves to row 1 (a place was tidied) and starts waiting; fix--a
	// still waits: only fix--b sounds.
	second := []Row{row(1, "fix--b", "blocked"), row(2, "fix--a", "waiting")}
	if got := Sounding(first, second); !slices.Equal(got, []int{1}) {
		t.Fatalf("second look sounds %v", got)
	}
	if got := Sounding(second, second); len(got) != 0 {
		t.Fatalf("nothing new sounds %v", got)
	}

	rows := []Row{row(1, "fix--a", "waiting"), {N: 2, Repo: "/gone", State: "unreadable"}}
	for _, c := range []struct {
		line string
		args string
		err  string
	}{
		{"t 1 it is hunter2", "tell --repo /r fix--a it is hunter2", ""},
		{"s 1", "stop --force --repo /r fix--a", ""},
		{"r 1", "retry --force --repo /r fix--a", ""},
		{"o 1", "attach --repo /r fix--a", ""},
		{"l 1 fix the login page", "launch --repo /r --kind fix --brief the login page", ""},
		{"t 1", "", "needs the text to tell"},
		{"l 1 fix", "", "needs a kind and a brief"},
		{"s 3", "", `"3" is not a row of the board (1 to 2)`},
		{"s", "", "needs a row number"},
		{"x 1", "", `"x" is not a key`},
		{"s 2", "", "could not be read, not a place"},
		{"", "", "type a key"},
	} {
		cmd, err := ParseCommand(c.line, rows)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want %q", c.line, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.line, err)
		case c.err == "" && strings.Join(cmd.Args, " ") != c.args:
			t.Errorf("%q: args %q, want %q", c.line, strings.Join(cmd.Args, " "), c.args)
		}
	}
	if cmd, _ := ParseCommand("q", rows); !cmd.Quit {
		t.Error("q does not quit")
	}
	if cmd, _ := ParseCommand("o 1", rows); !cmd.Attach {
		t.Error("o does not take the terminal")
	}
}

// TestBoardRowShowsReasonAndNext: a board row says why the place waits and
// the command that moves it on, within report.TableColumns however long its
// question (issue 47).
func TestBoardRowShowsReasonAndNext(t *testing.T) {
	p := report.PlaceStatus{Place: "fix--p1", Branch: "fix/p1", Ready: report.ReadyStatus{OK: true}, Worktree: "present",
		Stage: report.StageStatus{Name: "code", Index: 1, Count: 2, State: "waiting",
			Need: strings.Repeat("which of the two staging databases do I use? ", 4), Next: "git flume tell fix--p1 'ANSWER'"}}
	for i := 2; i <= 200; i++ {
		p.Conflicts = append(p.Conflicts, record.Conflict{Place: "fix--p1", With: fmt.Sprintf("fix--p%d", i), Files: []string{"a.go", "b.go"}, Exact: true})
	}
	hs := &Host{Repositories: []Repo{{Repo: "/src/app", Status: &report.Status{Places: []report.PlaceStatus{p}}}}}
	var out strings.Builder
	Write(&out, Rows(hs), "")
	line, _, _ := strings.Cut(out.String(), "\n")
	if term.Width(line) > report.TableColumns {
		t.Errorf("the row is %d columns:\n%s", term.Width(line), line)
	}
	for _, want := range []string{"!  1  app  fix--p1  code  waiting  needs", "fix--p1", "waiting", " needs: which of the two staging", "…  git flume tell fix--p1 'ANSWER'"} {
		if !strings.Contains(line, want) {
			t.Errorf("row\n%s\ndoes not hold %q", line, want)
		}
	}
}
