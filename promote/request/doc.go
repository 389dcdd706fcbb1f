// Package request reads a workspace request (P1) and holds the records
// its members keep under refs/flume/workspaces: the request as given, the
// member's phase, its worker's run, its checks' results, the receipts of
// its promotion. It only parses and validates; promote acts on them.
package request
