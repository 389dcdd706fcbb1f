// Package mcpserver serves tools over the Model Context Protocol's stdio
// transport: newline-delimited JSON-RPC 2.0, one message a line. It speaks
// what git flume's server needs and no more: the lifecycle (initialize,
// ping; notifications taken and dropped), tools/list, tools/call with a
// text result, and cancellation of a call in flight. It reads what
// jsonrpc.Guard let through, so every line is a JSON-RPC 2.0 object with a
// valid id, and it answers each request exactly once, which ends that
// request's time in flight for the guard.
//
// The SDK it replaces linked HTTP, TLS, OAuth, gob and a JSON Schema
// engine into every git flume command, which cost each start a millisecond
// of package init and the binary 7 MB; its client still checks
// this server in the tests.
package mcpserver
