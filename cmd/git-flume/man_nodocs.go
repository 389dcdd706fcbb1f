//go:build urfave_cli_no_docs

package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// manCommand, in a build without urfave/cli's documentation generator
// (`make` builds so: the markdown and roff packages it links cost every
// start their init; DESIGN.md, "Figures from code comments"), says where
// the page is. `make` makes
// it with a second build that has the generator.
func manCommand(*app) *cli.Command {
	return &cli.Command{
		Name:   "man",
		Usage:  "print the git-flume(1) man page (roff)",
		Hidden: true,
		Action: func(*cli.Context) error {
			return errors.New("this git-flume was built without its man page generator (tag urfave_cli_no_docs, as make builds it): " +
				"make install installs the page; go run ./cmd/git-flume man prints it")
		},
	}
}
