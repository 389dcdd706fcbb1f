package main

import (
	"bytes"
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"
)

// The MCP server's tools run the very commands of the command line, in
// process, so an MCP client sees exactly what `git flume … --json` prints
// (O2).

type mcpStatusIn struct {
	Place string `json:"place,omitempty" jsonschema:"one place, <kind>--<name>; all places when empty"`
	All   bool   `json:"all,omitempty" jsonschema:"include tidied places"`
}

type mcpLaunchIn struct {
	Kind  string `json:"kind" jsonschema:"the kind: fix, change, question or one declared in .flume/config"`
	Name  string `json:"name" jsonschema:"the place's name"`
	Brief string `json:"brief" jsonschema:"the brief, stored byte for byte"`
	Agent string `json:"agent,omitempty" jsonschema:"the agent program; default $FLUME_AGENT, else claude"`
}

type mcpTellIn struct {
	Place string `json:"place" jsonschema:"the place, <kind>--<name>"`
	Text  string `json:"text" jsonschema:"the message, confirmed in the agent's transcript"`
}

// runInProcess runs git-flume's own command line with args and returns
// what it printed and whether it failed.
func (a *app) runInProcess(ctx context.Context, args []string, stdin string) (string, bool) {
	var out, errOut bytes.Buffer
	code := run(ctx, append([]string{"git-flume"}, args...), &streams{In: strings.NewReader(stdin), Out: &out, Err: &errOut}, a.env.list)
	text := out.String()
	if code != 0 {
		text += errOut.String()
	}
	return text, code != 0
}

func (a *app) mcpResult(ctx context.Context, args []string, stdin string) (*mcp.CallToolResult, any, error) {
	text, failed := a.runInProcess(ctx, args, stdin)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: failed}, nil, nil
}

func mcpCommand(a *app) *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve status, launch and tell over MCP on standard input and output",
		Description: "An MCP server (stdio) for agents and editors: `status` returns the `status --json` document, " +
			"`launch` and `tell` act as the commands of the same names, in the repository --repo names.",
		UsageText: "git flume mcp [--repo DIR]",
		Flags:     []cli.Flag{repoFlag()},
		Action: func(c *cli.Context) error {
			repo := c.String("repo")
			s := mcp.NewServer(&mcp.Implementation{Name: "git-flume", Version: buildVersion()}, nil)
			mcp.AddTool(s, &mcp.Tool{Name: "status", Description: "git flume status --json: every place's stage, state, agent, claim and what tidying kept"},
				func(ctx context.Context, _ *mcp.CallToolRequest, in mcpStatusIn) (*mcp.CallToolResult, any, error) {
					args := []string{"status", "--json", "--repo", repo}
					if in.All {
						args = append(args, "--all")
					}
					if in.Place != "" {
						args = append(args, in.Place)
					}
					return a.mcpResult(ctx, args, "")
				})
			mcp.AddTool(s, &mcp.Tool{Name: "launch", Description: "git flume launch: make a place for a piece of work and start its kind's first stage"},
				func(ctx context.Context, _ *mcp.CallToolRequest, in mcpLaunchIn) (*mcp.CallToolResult, any, error) {
					args := []string{"launch", "--json", "--repo", repo, "--kind", in.Kind, "--name", in.Name, "--brief-file", "-"}
					if in.Agent != "" {
						args = append(args, "--agent", in.Agent)
					}
					return a.mcpResult(ctx, args, in.Brief)
				})
			mcp.AddTool(s, &mcp.Tool{Name: "tell", Description: "git flume tell: send a place's agent a message, confirmed in its transcript"},
				func(ctx context.Context, _ *mcp.CallToolRequest, in mcpTellIn) (*mcp.CallToolResult, any, error) {
					return a.mcpResult(ctx, []string{"tell", "--repo", repo, in.Place, in.Text}, "")
				})
			return s.Run(c.Context, &mcp.IOTransport{Reader: readCloser{a.io.In}, Writer: writeCloser{a.io.Out}})
		},
	}
}

type readCloser struct {
	r interface{ Read([]byte) (int, error) }
}

func (r readCloser) Read(p []byte) (int, error) { return r.r.Read(p) }
func (readCloser) Close() error                 { return nil }

type writeCloser struct {
	w interface{ Write([]byte) (int, error) }
}

func (w writeCloser) Write(p []byte) (int, error) { return w.w.Write(p) }
func (writeCloser) Close() error                  { return nil }
