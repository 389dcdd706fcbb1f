// Package engine moves a place's stages (S1): one step observes the active
// stage (its agent's transcript, its deliverable in git), decides with the
// run lifecycle's pure functions (agent/run) and writes the outcome by
// CAS; it starts each stage's fresh agent, proves its prompt arrived, ends
// it only once its deliverable exists, and keeps snapshots and
// notifications. The operator's verbs on a running stage (tell, stop,
// retry, go on, wait, attach, rollback) and the role guard live here too.
package engine
