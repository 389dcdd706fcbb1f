// Package term makes text safe to show on a person's terminal. Every string
// flume prints that came from a record, a transcript, a commit message or a
// remote may hold what a terminal acts on — escape sequences that write the
// clipboard, clear the screen, move the cursor; a carriage return or a
// newline that forges a line of output — so it is shown with those
// characters escaped, never acted on (R5, R7).
package term
