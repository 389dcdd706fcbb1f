// Package sandbox holds an agent's limits where it acts (A12):
// the kernel's Landlock, entered by the agent's own process before it
// becomes the program, so that every tool, a shell included, and every
// process they start inherit it. Only writing is limited: the agent reads
// what its user may read, and everything it may write is listed. Signals
// and abstract sockets to processes outside the sandbox are refused too
// where the kernel scopes them (Landlock 6).
package sandbox
