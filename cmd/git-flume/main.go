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
