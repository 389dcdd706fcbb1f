package board

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	agent "github.com/git-flume/git-flume/agents"
	"github.com/git-flume/git-flume/stage/report"

	"github.com/git-flume/git-flume/internal/proc"
	"github.com/git-flume/git-flume/internal/term"
	"github.com/git-flume/git-flume/internal/words"
	"github.com/git-flume/git-flume/stage"
)

// The board is the host-wide status as one numbered list a person acts on
// with a key and a row number: open, tell, stop, retry,
// launch. It is what the herdr plugin shows in its pane, and it runs in
// any terminal. A row that newly needs a person sounds (the terminal's
// bell) once, when it starts to. The functions here are pure: the command
// layer reads the status, runs each command through git flume itself,
// and prints.

// Row is one place on the board.
type Row struct {
	N        int    // its number on the board, from 1
	Repo     string // the repository's path
	Place    string
	Stage    string
	State    string
	Note     string // what it needs, why it stopped, what else is wrong (status's reason)
	Next     string // the command that moves it on, when it waits for someone
	PaneHost string // tmux, herdr, or "" (no agent up)
	Pane     string
}

// Attention reports whether a row's state asks for a person: an open
// question, a dialog or error, an agent that never started or stopped
// short, or one that looks stuck.
func (r Row) Attention() bool {
	switch r.State {
	case "waiting", "blocked", "stuck", "never-started", "cut", "unknown":
		return true
	}
	return false
}

// Rows are the open places of a host status, in the index's order,
// numbered from 1; a repository that could not be read is a row of its
// own, with no place.
func Rows(hs *Host) []Row {
	var rows []Row
	for _, rs := range hs.Repositories {
		if rs.Status == nil {
			rows = append(rows, Row{N: len(rows) + 1, Repo: rs.Repo, State: "unreadable", Note: rs.Error})
			continue
		}
		for _, p := range rs.Status.Places {
			if p.Dropped {
				continue
			}
			row := Row{N: len(rows) + 1, Repo: rs.Repo, Place: p.Place, Stage: p.Stage.Name, State: p.Stage.State,
				Note: strings.Join(report.ReasonNotes(&p), "; "), Next: words.OneLine(p.Stage.Next)}
			if a := p.Agent; a != nil && a.State == "up" {
				row.PaneHost, row.Pane = a.PaneHost, a.Pane
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// mark is "!" for a row that needs a person.
func (r Row) mark() string {
	if r.Attention() {
		return "!"
	}
	return " "
}

// Sounding are the rows of cur that need a person and did not in prev (a
// place keeps its identity by repository and place, whatever its number).
func Sounding(prev, cur []Row) []int {
	before := map[string]bool{}
	for _, r := range prev {
		before[r.Repo+"\x00"+r.Place] = r.Attention()
	}
	var out []int
	for _, r := range cur {
		if r.Attention() && !before[r.Repo+"\x00"+r.Place] {
			out = append(out, r.N)
		}
	}
	return out
}

// Keys is the board's help line.
const Keys = "o N open · t N TEXT tell · s N stop · r N retry · l N KIND BRIEF launch beside row N · q quit"

// Write prints the board: one line per row of at most report.TableColumns
// (its reason cut to leave room for its next step), marked "!" when it
// needs a person, then the keys and the last command's outcome. Every string from
// a record is printed through the caller's escaping writer, so the bell of
// the rows that sound (Sounding) is the caller's to ring on the terminal
// itself.
func Write(w io.Writer, rows []Row, said string) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no places on this host (git flume launch makes one)")
	}
	var places []term.Row
	for _, r := range rows {
		if r.Place != "" {
			places = append(places, term.Row{Cols: []string{r.mark() + fmt.Sprintf("%3d", r.N), filepath.Base(r.Repo), r.Place, r.Stage, r.State},
				Reason: words.OneLine(r.Note), Next: r.Next})
		}
	}
	lines := term.FitLines(places, []int{4, 16, report.PlaceColumn, report.StageColumn, report.StateColumn}, report.TableColumns, report.ReasonAtLeast)
	for _, r := range rows {
		if r.Place == "" {
			fmt.Fprintf(w, "%s%3d  %s: %s\n", r.mark(), r.N, r.Repo, r.Note)
			continue
		}
		fmt.Fprintln(w, lines[0])
		lines = lines[1:]
	}
	fmt.Fprintln(w, Keys)
	if said != "" {
		fmt.Fprintln(w, said)
	}
}

// A Command is a line typed on the board, resolved against its rows:
// the git flume command that carries it out, run in the row's repository.
type Command struct {
	Quit bool
	Row  Row
	// Args are git flume's arguments; Attach marks a command that takes
	// over the terminal until it ends (open).
	Args   []string
	Attach bool
}

// ParseCommand reads one typed line: a key, a row number, and the
// words the key takes. An unknown key, a row not on the board or a missing
// word is an error that says what was expected.
func ParseCommand(line string, rows []Row) (Command, error) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return Command{}, fmt.Errorf("type a key: %s", Keys)
	}
	if f[0] == "q" {
		return Command{Quit: true}, nil
	}
	if len(f) < 2 {
		return Command{}, fmt.Errorf("%q needs a row number: %s", f[0], Keys)
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 1 || n > len(rows) {
		return Command{}, fmt.Errorf("%q is not a row of the board (1 to %d)", f[1], len(rows))
	}
	row := rows[n-1]
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), f[0])), f[1]))
	if row.Place == "" && f[0] != "l" {
		return Command{}, fmt.Errorf("row %d is a repository that could not be read, not a place", n)
	}
	c := Command{Row: row}
	switch f[0] {
	case "o":
		c.Args, c.Attach = []string{"attach", "--repo", row.Repo, row.Place}, true
	case "t":
		if rest == "" {
			return Command{}, fmt.Errorf("t %d needs the text to tell", n)
		}
		c.Args = []string{"tell", "--repo", row.Repo, row.Place, rest}
	case "s":
		c.Args = []string{"stop", "--force", "--repo", row.Repo, row.Place}
	case "r":
		c.Args = []string{"retry", "--force", "--repo", row.Repo, row.Place}
	case "l":
		kind, brief, _ := strings.Cut(rest, " ")
		if kind == "" || strings.TrimSpace(brief) == "" {
			return Command{}, fmt.Errorf("l %d needs a kind and a brief: l %d KIND BRIEF", n, n)
		}
		c.Args = []string{"launch", "--repo", row.Repo, "--kind", kind, "--brief", strings.TrimSpace(brief)}
	default:
		return Command{}, fmt.Errorf("%q is not a key: %s", f[0], Keys)
	}
	return c, nil
}

// Terminal is where the board reads what is typed and draws: Out
// escapes what a record holds, Raw takes the board's own control
// sequences (clear, bell); TTY redraws in place.
type Terminal struct {
	In       io.Reader
	Out, Raw io.Writer
	TTY      bool
}

// WatchStatus redraws the status table read every interval until ctx
// ends (O3): in place (cursor home, clear) on a terminal, else the table
// again each time it changed.
func WatchStatus(ctx context.Context, t Terminal, interval time.Duration, wide bool, read func(context.Context) (*report.Status, error)) error {
	last := ""
	for {
		st, err := read(ctx)
		if err != nil {
			return err
		}
		var b strings.Builder
		if err := report.WriteStatusTable(&b, st, wide, term.Columns(t.Raw)); err != nil {
			return err
		}
		if table := b.String(); table != last {
			if t.TTY {
				fmt.Fprint(t.Raw, "\x1b[H\x1b[2J") // flume's own control, past the escaping writer
				fmt.Fprintf(t.Out, "git flume status — %s\n\n", time.Now().Format("15:04:05"))
			} else if last != "" {
				fmt.Fprintln(t.Out)
			}
			fmt.Fprint(t.Out, table)
			last = table
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// Run draws the host's board every interval until q, the end of its
// input, or the end of ctx; a command typed is parsed against the rows
// shown and done by do, which says what came of it.
// Lines are read only when asked for, so a command that takes over the
// terminal (open) has it to itself.
func Run(ctx context.Context, env *stage.Env, term Terminal, interval time.Duration, do func(context.Context, Command) string) error {
	want, lines := make(chan struct{}), make(chan string)
	go func() {
		in := bufio.NewReader(term.In)
		for range want {
			line, err := in.ReadString('\n')
			if err != nil && line == "" {
				close(lines)
				return
			}
			lines <- line
		}
	}()
	defer close(want)
	var prev []Row
	said := ""
	asked := false
	for {
		hs, err := ReadHost(ctx, env, false)
		if err != nil {
			return err
		}
		rows := Rows(hs)
		if term.TTY {
			fmt.Fprint(term.Raw, "\x1b[H\x1b[2J")
		}
		if len(Sounding(prev, rows)) > 0 {
			fmt.Fprint(term.Raw, "\a") // a row starts to need a person
		}
		Write(term.Out, rows, said)
		prev = rows
		if !asked {
			want <- struct{}{}
			asked = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
			continue
		case line, ok := <-lines:
			asked = false
			if !ok {
				return nil
			}
			cmd, err := ParseCommand(line, rows)
			switch {
			case err != nil:
				said = err.Error()
			case cmd.Quit:
				return nil
			default:
				said = do(ctx, cmd)
			}
		}
	}
}

// KeyRunner runs what a key typed on the board asks, as git flume itself
// in the row's repository: the terminal a command that takes it over
// (open) gets, the environment the commands run with, and herdr's binary
// where the board runs in herdr.
type KeyRunner struct {
	In             io.Reader
	RawOut, RawErr io.Writer
	Env            []string
	Herdr          string
}

// Do runs a board command through git flume itself and says how it
// went: its output's last line, or its error.
func (k KeyRunner) Do(ctx context.Context, cmd Command) string {
	exe, err := os.Executable()
	if err != nil {
		return err.Error()
	}
	if cmd.Attach && cmd.Row.PaneHost == "herdr" {
		return fmt.Sprintf("%s runs in herdr pane %s: open it in herdr's sidebar", cmd.Row.Place, cmd.Row.Pane)
	}
	if bin := k.Herdr; cmd.Attach && bin != "" {
		// Inside herdr: the agent's tmux pane opens in a pane of its own
		// beside the board (the plugin's attach pane).
		c := proc.Cmd{Path: bin, Args: []string{"plugin", "pane", "open", "--plugin", agent.HerdrPluginID, "--entrypoint", "attach",
			"--placement", "split", "--focus", "--env", "FLUME_BOARD_REPO=" + cmd.Row.Repo, "--env", "FLUME_BOARD_PLACE=" + cmd.Row.Place},
			Env: k.Env}
		if _, err := proc.Output(ctx, c); err != nil {
			return fmt.Sprintf("open %s: %v", cmd.Row.Place, err)
		}
		return "opened " + cmd.Row.Place + " beside the board"
	}
	c := proc.Cmd{Path: exe, Args: cmd.Args, Dir: cmd.Row.Repo, Env: k.Env}
	if cmd.Attach {
		c.Stdin, c.Stdout, c.Stderr = k.In, k.RawOut, k.RawErr
		if err := proc.Run(ctx, c); err != nil {
			return fmt.Sprintf("open %s: %v", cmd.Row.Place, err)
		}
		return "back from " + cmd.Row.Place
	}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err = proc.Run(ctx, c)
	// What a launch made is its first line; any other command's outcome
	// its last.
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	what, line := cmd.Args[0]+" "+cmd.Row.Place, lines[len(lines)-1]
	if cmd.Args[0] == "launch" {
		what, line = "launch in "+filepath.Base(cmd.Row.Repo), lines[0]
	}
	if err != nil && line == "" {
		line = err.Error()
	}
	return what + ": " + line
}
