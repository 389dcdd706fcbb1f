// Package board holds the host-wide views: every repository's status on
// this host read at once (status --host), and the board a person acts on
// with a key and a row number (open, tell, stop, retry, launch), drawn in
// any terminal and in herdr's pane. It reads through stage/report; what a
// key runs, it runs through git flume itself.
package board
