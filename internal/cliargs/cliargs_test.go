package cliargs

import (
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestFlagsFirst: flags after a command's arguments are moved before them
// with their values, booleans take no value, "--" ends the flags, and a
// command with subcommands is left alone.
func TestFlagsFirst(t *testing.T) {
	cmds := []*cli.Command{
		{Name: "drop", Flags: []cli.Flag{&cli.BoolFlag{Name: "take-over"}, &cli.StringFlag{Name: "repo"}}},
		{Name: "workspace", Subcommands: []*cli.Command{{Name: "start", Flags: []cli.Flag{&cli.StringFlag{Name: "root"}}}}},
	}
	for _, c := range []struct{ in, want []string }{
		{[]string{"flume", "drop", "fix--a", "--take-over"}, []string{"flume", "drop", "--take-over", "fix--a"}},
		{[]string{"flume", "drop", "fix--a", "--repo", "/r", "x"}, []string{"flume", "drop", "--repo", "/r", "fix--a", "x"}},
		{[]string{"flume", "drop", "fix--a", "--repo=/r"}, []string{"flume", "drop", "--repo=/r", "fix--a"}},
		{[]string{"flume", "drop", "a", "--", "--take-over"}, []string{"flume", "drop", "a", "--", "--take-over"}},
		{[]string{"flume", "workspace", "start", "req.json", "--root", "/w"}, []string{"flume", "workspace", "start", "--root", "/w", "req.json"}},
		{[]string{"flume", "lauch", "x", "--repo", "/r"}, []string{"flume", "lauch", "x", "--repo", "/r"}},
	} {
		if got := FlagsFirst(cmds, c.in); !slices.Equal(got, c.want) {
			t.Errorf("FlagsFirst(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestClosest: a swap, a dropped or doubled letter finds the command
// meant; a word far from every command, a hidden command, or a short
// name two edits away finds none.
func TestClosest(t *testing.T) {
	cmds := []*cli.Command{{Name: "status"}, {Name: "launch"}, {Name: "tidy"}, {Name: "hook", Hidden: true}, {Name: "explain"}}
	for typed, want := range map[string]string{
		"stauts": "status", "statu": "status", "lanuch": "launch", "tiddy": "tidy", "explian": "explain",
		"nosuch": "", "hok": "", "xy": "", "statuses": "status",
	} {
		if got := Closest(cmds, typed); got != want {
			t.Errorf("Closest(%q) = %q, want %q", typed, got, want)
		}
	}
}
