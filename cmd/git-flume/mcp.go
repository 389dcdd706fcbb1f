package main

import (
	"bytes"
	"context"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/git-flume/git-flume/internal/jsonrpc"
	"github.com/git-flume/git-flume/stage"
)

// The MCP server's tools call what the command line's commands call, in
// process, and print what those print, so an MCP client sees exactly what
// `git flume … --json` prints (O2).

type mcpStatusIn struct {
	Place string `json:"place,omitempty" jsonschema:"one place, <kind>--<name>; all places when empty"`
	All   bool   `json:"all,omitempty" jsonschema:"include tidied places"`
}

type mcpLaunchIn struct {
	Kind  string `json:"kind" jsonschema:"the kind: fix, change, question or one declared in .flume/config"`
	Name  string `json:"name,omitempty" jsonschema:"the place's name; default: made from the brief's first words"`
	Brief string `json:"brief" jsonschema:"the brief, stored byte for byte"`
	Agent string `json:"agent,omitempty" jsonschema:"the agent program; default $FLUME_AGENT, else claude"`
	Pane  string `json:"pane,omitempty" jsonschema:"where the agent runs: tmux, herdr, print or none; default $FLUME_PANE, else herdr when run inside herdr, else tmux"`
}

type mcpTellIn struct {
	Place string `json:"place" jsonschema:"the place, <kind>--<name>"`
	Text  string `json:"text" jsonschema:"the message, confirmed in the agent's transcript"`
}

// mcpResult runs a tool's work, which prints to out; a failure ends the
// text as the command line reports it.
func (a *app) mcpResult(work func(out, errOut io.Writer) error) (*mcp.CallToolResult, any, error) {
	var out, errOut bytes.Buffer
	err := work(&out, &errOut)
	text := out.String()
	if err != nil {
		exitCode(&errOut, err)
		text += errOut.String()
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: err != nil}, nil, nil
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
					return a.mcpResult(func(out, _ io.Writer) error {
						opts := stage.StatusOptions{Repo: repo, All: in.All}
						if in.Place != "" {
							id, err := stage.PlaceID(in.Place)
							if err != nil {
								return err
							}
							opts.Place = id
						}
						st, err := a.status(ctx, opts)
						if err != nil {
							return err
						}
						return writeJSON(out, st)
					})
				})
			mcp.AddTool(s, &mcp.Tool{Name: "launch", Description: "git flume launch: make a place for a piece of work and start its kind's first stage"},
				func(ctx context.Context, _ *mcp.CallToolRequest, in mcpLaunchIn) (*mcp.CallToolResult, any, error) {
					return a.mcpResult(func(out, errOut io.Writer) error {
						err := a.launch(ctx, launchInput{Repo: repo, Kind: in.Kind, Name: in.Name, Brief: in.Brief, Agent: in.Agent, Pane: in.Pane, JSON: true}, out, errOut)
						if err == nil {
							a.autoSync(ctx, errOut)
						}
						return err
					})
				})
			mcp.AddTool(s, &mcp.Tool{Name: "tell", Description: "git flume tell: send a place's agent a message, confirmed in its transcript"},
				func(ctx context.Context, _ *mcp.CallToolRequest, in mcpTellIn) (*mcp.CallToolResult, any, error) {
					return a.mcpResult(func(out, errOut io.Writer) error {
						o := stage.TellOptions{PlaceOptions: stage.PlaceOptions{Repo: repo, Place: in.Place, Gate: stage.GateOptions{Session: a.callerSession()}}, Text: in.Text}
						if err := a.tell(ctx, o, out); err != nil {
							return err
						}
						a.autoSync(ctx, errOut)
						return nil
					})
				})
			// What the SDK would die on never reaches it: the guard
			// answers it with JSON-RPC's error and the server goes on.
			in, out := jsonrpc.Guard(a.io.In, a.io.RawOut)
			return s.Run(c.Context, &mcp.IOTransport{Reader: in, Writer: out})
		},
	}
}
