// Command git-flume launches coding agents into places of their own, runs
// each piece of work through its stages, and keeps all of its state in git
// under refs/flume/. Run it as `git flume …`.
//
// This package only wires commands: flags are parsed into an options struct
// and handed to the packages that do the work. It is the only place that
// reads the environment or exits.
package main
