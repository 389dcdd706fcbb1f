// Package agent starts coding-agent programs in panes and reads what they
// did from their own transcripts (SPEC A1–A3). Nothing here decides from the
// screen that a prompt arrived or that work is done: the screen only tells
// whether it is safe to type (X3); the transcript is the proof (X5).
package agent
