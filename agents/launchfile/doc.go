// Package launchfile keeps flume's runtime folder (A13): the launch files
// a pane's launcher becomes an agent from, and the marks that flume is
// ending a session. It lives where no agent's sandbox can write (its own
// view hides it), and every file in it is read only if flume wrote it.
package launchfile
