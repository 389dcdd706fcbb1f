// Package jsonrpc guards a JSON-RPC 2.0 server on a stream of
// newline-delimited messages (MCP's stdio transport): every line a client
// sends is checked before the server reads it, and what would end or wedge
// the server — a line that is not JSON, a NUL, nesting past any sense, an
// id that is an object, a batch, an id reused while its request is still
// in flight — is answered with the error the JSON-RPC 2.0 specification
// names and never reaches the server, which keeps serving.
package jsonrpc
