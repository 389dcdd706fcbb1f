package main

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/git-flume/git-flume/agents/launchfile"
	"github.com/git-flume/git-flume/internal/gcpace"
)

func init() {
	if len(os.Args) > 1 && launchfile.Launcher(os.Args) {
		// The launcher becomes the agent on the process's first thread:
		// while another thread executes, the kernel shows the process as
		// a zombie with status 0 to anyone who looks (A10).
		runtime.LockOSThread()
	}
}

func main() {
	gcpace.Tighten()
	// A closed terminal (SIGHUP) ends a command as Ctrl-C and SIGTERM do:
	// through its context, so that a launch finishes or undoes the step
	// it is in instead of dying inside it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, os.Args, &streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Environ())
	stop()
	os.Exit(code)
}
