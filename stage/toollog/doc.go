// Package toollog keeps a place's live log (W4): every tool call its
// agents' transcripts show, appended once each under the log's lock, read
// from an offset and followed; and a stage's last tool calls as a person
// reads them.
package toollog
