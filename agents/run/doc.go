// Package run is the one lifecycle of an agent run, whoever started it: a
// stage's agent, the workspace worker, a delegated place's agent (A10). It
// owns the run's record (Agent, what was started; Life, where the run
// stands), what a step observed of it (Observation, read by Observe), the
// pure decision of what moves next (Decide, Resent) and the effects of a
// move (Apply). The deliberate differences between kinds of run are a
// Policy value; everything else is decided once, here.
package run
