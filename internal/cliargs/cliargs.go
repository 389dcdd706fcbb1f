package cliargs

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// FlagsFirst moves a command's flags before its arguments, so that flags
// are taken wherever they stand, as git takes them (`git flume drop PLACE
// --take-over`); urfave stops reading flags at the first argument. A
// flag's value goes with it; everything after "--" stays an argument.
// Arguments keep their order.
func FlagsFirst(cmds []*cli.Command, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	rest := args[1:]
	var cmd *cli.Command
	for len(rest) > 0 {
		next := findCommand(cmds, rest[0])
		if next == nil {
			break
		}
		cmd, cmds = next, next.Subcommands
		out, rest = append(out, rest[0]), rest[1:]
	}
	if cmd == nil || len(cmd.Subcommands) > 0 || cmd.SkipFlagParsing {
		return args
	}
	var flags, positional []string
	for i := 0; i < len(rest); i++ {
		arg := rest[i]
		switch {
		case arg == "--":
			positional = append(positional, rest[i:]...)
			i = len(rest)
		case len(arg) > 1 && arg[0] == '-':
			flags = append(flags, arg)
			if takesValue(cmd, arg) && i+1 < len(rest) {
				i++
				flags = append(flags, rest[i])
			}
		default:
			positional = append(positional, arg)
		}
	}
	return append(append(out, flags...), positional...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether flag arg (as written: -x, --name) of cmd
// takes the next argument as its value: any flag but a boolean one, unless
// the value is given with "=".
func takesValue(cmd *cli.Command, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	if strings.Contains(name, "=") {
		return false
	}
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			if _, ok := f.(*cli.BoolFlag); ok {
				return false
			}
			return true
		}
	}
	return false
}

// UsageErrors makes a command's bad flag a usage error (exit 2) that names
// the command's help, with usagef, instead of urfave's "Incorrect Usage" and the whole
// help text on standard output.
//
// A required flag left out is one such line too: urfave checks required
// flags itself and prints the whole help before its error (exit 1), so
// they are checked here instead, before anything else the command does.
func UsageErrors(cmds []*cli.Command, parent string, usagef func(format string, args ...any) error) {
	for _, cmd := range cmds {
		name := parent + " " + cmd.Name
		short := strings.TrimPrefix(name, "git flume ")
		UsageErrors(cmd.Subcommands, name, usagef)
		cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			return usagef("%s: %v (see '%s -h')", short, err, name)
		}
		var required []string
		for _, f := range cmd.Flags {
			if sf, ok := f.(*cli.StringFlag); ok && sf.Required {
				sf.Required = false
				required = append(required, sf.Name)
			}
		}
		if len(required) == 0 {
			continue
		}
		before := cmd.Before
		cmd.Before = func(c *cli.Context) error {
			for _, flag := range required {
				if !c.IsSet(flag) {
					return usagef("%s: --%s is needed (see '%s -h')", short, flag, name)
				}
			}
			if before != nil {
				return before(c)
			}
			return nil
		}
	}
}

// Brief is launch's brief: --brief's text, or --brief-file's ("-" for
// standard input); a wrong pair is a usage error made by usagef.
func Brief(c *cli.Context, usagef func(format string, args ...any) error, stdin io.Reader) (string, error) {
	text, file := c.String("brief"), c.String("brief-file")
	switch {
	case c.IsSet("brief") && c.IsSet("brief-file"):
		return "", usagef("launch: give --brief or --brief-file, not both")
	case c.IsSet("brief"):
		return text, nil
	case file == "-":
		data, err := io.ReadAll(stdin)
		return string(data), err
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("read brief: %w", err)
		}
		return string(data), nil
	}
	return "", usagef("launch: a brief is required: --brief TEXT or --brief-file FILE")
}

// SetFlags are the flags of cmd set on c's command line, but those named
// in skip, as "--name=value" words: a command line to run cmd again
// elsewhere.
func SetFlags(c *cli.Context, cmd *cli.Command, skip ...string) []string {
	var words []string
	for _, f := range cmd.Flags {
		if name := f.Names()[0]; !slices.Contains(skip, name) && c.IsSet(name) {
			words = append(words, fmt.Sprintf("--%s=%v", name, c.Value(name)))
		}
	}
	return words
}

// Closest is the command among cmds (not hidden) a mistyped name most
// likely meant, as git's own "did you mean" guesses: the nearest by
// edit distance (a swap of two neighbours one edit), at most two edits
// and fewer than half the name's letters; "" when none is that near.
func Closest(cmds []*cli.Command, typed string) string {
	best, bestD := "", 3
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		for _, name := range c.Names() {
			if d := editDistance(name, typed); d < bestD && 2*d < len(typed) {
				best, bestD = name, d
			}
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and swaps of neighbours, one each.
func editDistance(a, b string) int {
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
