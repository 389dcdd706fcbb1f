// Package sidedoor is a test helper: the side doors out of an agent's
// boundary (io_uring, a Unix socket, a datagram pair, the kernel's
// keyrings, typing into a terminal), each tried for real, so that the
// sandbox's own tests and the end-to-end scripts probe the same calls.
// Nothing in git flume imports it.
package sidedoor
