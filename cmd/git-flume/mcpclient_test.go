package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpClient stands in for an MCP client (an editor, Claude Code) in
// testscripts: it starts `git-flume mcp` as a subprocess, speaks the
// protocol to it over stdio, and prints what it got.
//
//	mcp-client tools              list the tools
//	mcp-client call TOOL JSON     call TOOL with JSON arguments; print its text; exit 1 on a tool error
func mcpClient() int {
	ctx := context.Background()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mcp-client tools | call TOOL JSON")
		return 2
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "mcp-client", Version: "test"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command("git-flume", "mcp")}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		return 1
	}
	defer cs.Close()
	switch os.Args[1] {
	case "tools":
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Println(t.Name)
		}
		return 0
	case "call":
		var args map[string]any
		if err := json.Unmarshal([]byte(os.Args[3]), &args); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: os.Args[2], Arguments: args})
		if err != nil {
			fmt.Fprintln(os.Stderr, "call:", err)
			return 1
		}
		for _, content := range res.Content {
			if t, ok := content.(*mcp.TextContent); ok {
				fmt.Print(t.Text)
			}
		}
		if res.IsError {
			return 1
		}
		return 0
	}
	return 2
}
