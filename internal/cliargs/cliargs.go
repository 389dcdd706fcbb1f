package cliargs

import (
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
