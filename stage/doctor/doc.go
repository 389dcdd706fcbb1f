// Package doctor is `git flume doctor`: what a stage needs on this
// machine, read before a first launch and never written: git, a pane
// host, each layer of an agent's boundary, flume's hooks in the
// repository, copy-on-write for [run] deps, and per agent program
// whether it can start here unattended and what to set up.
package doctor
