package main

import (
	"context"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/git-flume/git-flume/internal/jsonfmt"
	"github.com/git-flume/git-flume/internal/jsonrpc"
	"github.com/git-flume/git-flume/internal/mcpserver"
	"github.com/git-flume/git-flume/stage"
	"github.com/git-flume/git-flume/stage/engine"
	"github.com/git-flume/git-flume/stage/record"
	"github.com/git-flume/git-flume/stage/report"
)

// The MCP server's tools call what the command line's commands call, in
// process, and print what those print, so an MCP client sees exactly what
// `git flume … --json` prints (O2).

type mcpStatusIn struct {
	Place string `json:"place"`
	All   bool   `json:"all"`
}

type mcpLaunchIn struct {
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Brief string `json:"brief"`
	Agent string `json:"agent"`
	Pane  string `json:"pane"`
}

type mcpTellIn struct {
	Place string `json:"place"`
	Text  string `json:"text"`
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
			s := &mcpserver.Server{Name: "git-flume", Version: buildVersion(), Tools: a.mcpTools(c.String("repo"))}
			// What would end or wedge the server never reaches it: the
			// guard answers it with JSON-RPC's error and the server goes on.
			in, out := jsonrpc.Guard(a.io.In, a.io.RawOut)
			return s.Serve(c.Context, in, out)
		},
	}
}

// failed prints err as the command line prints it, for an MCP tool's
// result.
func (a *app) failed(w io.Writer, err error) { exitCode(w, err) }

// mcpTools are the server's tools, acting in repository repo.
func (a *app) mcpTools(repo string) []mcpserver.Tool {
	return []mcpserver.Tool{
		mcpserver.Typed("status", "git flume status --json: every place's stage, state, agent, claim and what tidying kept",
			[]mcpserver.Param{
				{Name: "place", Type: "string", Description: "one place, <kind>--<name>; all places when empty"},
				{Name: "all", Type: "boolean", Description: "include tidied places"},
			},
			func(ctx context.Context, in mcpStatusIn, out, _ io.Writer) error {
				opts := report.StatusOptions{Repo: repo, All: in.All}
				if in.Place != "" {
					id, err := record.PlaceID(in.Place)
					if err != nil {
						return err
					}
					opts.Place = id
				}
				st, err := a.status(ctx, opts)
				if err != nil {
					return err
				}
				return jsonfmt.Write(out, st)
			}, a.failed),
		mcpserver.Typed("launch", "git flume launch: make a place for a piece of work and start its kind's first stage",
			[]mcpserver.Param{
				{Name: "kind", Type: "string", Required: true, Description: "the kind: fix, change, question or one declared in .flume/config"},
				{Name: "name", Type: "string", Description: "the place's name; default: made from the brief's first words"},
				{Name: "brief", Type: "string", Required: true, Description: "the brief, stored byte for byte"},
				{Name: "agent", Type: "string", Description: "the agent program; default $FLUME_AGENT, else claude"},
				{Name: "pane", Type: "string", Description: "where the agent runs: tmux, herdr, print or none; default $FLUME_PANE, else herdr when run inside herdr, else tmux"},
			},
			func(ctx context.Context, in mcpLaunchIn, out, errOut io.Writer) error {
				err := a.launch(ctx, launchInput{Repo: repo, Kind: in.Kind, Name: in.Name, Brief: in.Brief, Agent: in.Agent, Pane: in.Pane, JSON: true}, out, errOut)
				if err == nil {
					a.autoSync(ctx, errOut)
				}
				return err
			}, a.failed),
		mcpserver.Typed("tell", "git flume tell: send a place's agent a message, confirmed in its transcript",
			[]mcpserver.Param{
				{Name: "place", Type: "string", Required: true, Description: "the place, <kind>--<name>"},
				{Name: "text", Type: "string", Required: true, Description: "the message, confirmed in the agent's transcript"},
			},
			func(ctx context.Context, in mcpTellIn, out, errOut io.Writer) error {
				o := engine.TellOptions{PlaceOptions: stage.PlaceOptions{Repo: repo, Place: in.Place, Gate: stage.GateOptions{Session: a.callerSession()}}, Text: in.Text}
				if err := a.tell(ctx, o, out); err != nil {
					return err
				}
				a.autoSync(ctx, errOut)
				return nil
			}, a.failed),
	}
}
