package main

import "time"

// The test build's two seams into the stage engine and the workspace
// verbs; both nil in git-flume itself.
var (
	// faultHook is called at named points of an engine step or a verb; a
	// crash test kills the process there (FLUME_FAULT).
	faultHook func(point string)
	// clockHook is the clock the engine's and the worker's timers read; a
	// script moves it forward instead of sleeping past a window.
	clockHook func() time.Time
)
