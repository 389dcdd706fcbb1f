// Package codexhook gives Codex flume's guard as a PreToolUse hook of one
// run (a -c override), trusted for that hook alone through Codex's own
// app-server.
package codexhook
