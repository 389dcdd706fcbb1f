// Package fakeherdr is a stand-in for herdr's socket API in tests:
// newline-delimited JSON on a Unix socket, every call recorded in order.
// It keeps no terminals: a new pane's screen is empty at its first read
// and a shell prompt after; agent.get answers Status.
package fakeherdr
