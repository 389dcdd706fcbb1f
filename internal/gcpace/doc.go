// Package gcpace sets the pace of Go's garbage collector for a flume
// command: Go's default for a small one, sooner collections for a read of
// thousands of places (issue 46).
package gcpace
