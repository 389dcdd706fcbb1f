// Command git-flume launches coding agents into places of their own, runs
// each piece of work through its stages, and keeps all of its state in git
// under refs/flume/. Run it as `git flume …`.
//
// This package only wires commands: flags are parsed into an options struct
// and handed to the packages that do the work. It is the only place that
// reads the environment or exits.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// A closed terminal (SIGHUP) ends a command as Ctrl-C and SIGTERM do:
	// through its context, so that a launch finishes or undoes the step
	// it is in instead of dying inside it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, os.Args, &streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Environ())
	stop()
	os.Exit(code)
}
