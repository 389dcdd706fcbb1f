package codexhook

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/git-flume/git-flume/internal/proc"
)

// Codex runs flume's guard as a PreToolUse hook given for the run alone:
// a config override on its command line (-c), which
// Codex lists as a "sessionFlags" hook. Codex runs a hook that no admin
// manages only once its exact content is trusted, and records that trust
// by the content's hash in the user's config.toml. flume asks Codex's own
// app-server for the hook's hash and trust, writes the trust for that hook
// alone through the same server when it is missing, and reads it back: it
// never computes the hash itself and never bypasses trust for other hooks.
// The hook's content is the same for every run of one guard command (the
// place comes from FLUME_PLACE), so the trust is written once.

// Override is the -c override that gives Codex flume's guard, run as
// command (the guard's argv joined), as its PreToolUse hook for every tool.
func Override(command string) string {
	return fmt.Sprintf(`hooks.PreToolUse=[{matcher=".*",hooks=[{type="command",command=%s,timeout=60}]}]`, tomlString(command))
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// codexHookInfo is what Codex's hooks/list says of one hook.
type codexHookInfo struct {
	Key         string `json:"key"`
	Command     string `json:"command"`
	Source      string `json:"source"`
	CurrentHash string `json:"currentHash"`
	TrustStatus string `json:"trustStatus"`
	Enabled     bool   `json:"enabled"`
}

// Trust makes sure Codex (program, run with environ) will run the
// guard hook override for a session in dir: it lists the hook through
// `codex app-server`, trusts it there if it is not trusted yet, and lists
// it again. An error says why the guard would not run; the caller then
// starts nothing.
func Trust(ctx context.Context, program, override, dir string, environ []string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := startCodexServer(ctx, program, override, dir, environ)
	if err != nil {
		return err
	}
	defer s.close()
	hook, err := s.guardHook(dir)
	if err != nil {
		return err
	}
	if hook.TrustStatus == "trusted" || hook.TrustStatus == "managed" {
		return nil
	}
	edit := map[string]any{"keyPath": "hooks.state." + tomlString(hook.Key) + ".trusted_hash",
		"mergeStrategy": "upsert", "value": hook.CurrentHash}
	if err := s.call("config/batchWrite", map[string]any{"edits": []any{edit}}, nil); err != nil {
		return fmt.Errorf("codex did not record trust in flume's guard hook: %w", err)
	}
	if hook, err = s.guardHook(dir); err != nil {
		return err
	}
	if hook.TrustStatus != "trusted" || !hook.Enabled {
		return fmt.Errorf("codex lists flume's guard hook as %s (enabled %v) after trusting it", hook.TrustStatus, hook.Enabled)
	}
	return nil
}

// codexServer is one `codex app-server` conversation over its standard
// input and output, a JSON message a line.
type codexServer struct {
	in   io.WriteCloser
	out  *bufio.Reader
	done chan struct{} // closed once the server exited
	id   int
}

func startCodexServer(ctx context.Context, program, override, dir string, environ []string) (*codexServer, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &codexServer{in: inW, out: bufio.NewReader(outR), done: make(chan struct{})}
	go func() {
		err := proc.Run(ctx, proc.Cmd{Path: program, Args: []string{"-c", override, "app-server"}, Dir: dir, Env: environ, Stdin: inR, Stdout: outW})
		outW.CloseWithError(fmt.Errorf("codex app-server ended: %v", err)) // what a call reading on is told
		close(s.done)
	}()
	if err := s.call("initialize", map[string]any{"clientInfo": map[string]string{"name": "git-flume", "version": "1"}}, nil); err != nil {
		s.close()
		return nil, fmt.Errorf("codex app-server: %w", err)
	}
	if err := s.send(map[string]any{"jsonrpc": "2.0", "method": "initialized"}); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *codexServer) close() {
	_ = s.in.Close() // the server reads its end and exits
	<-s.done
}

func (s *codexServer) send(msg any) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = s.in.Write(append(data, '\n'))
	return err
}

// call sends one request and reads lines until its answer, skipping the
// server's notifications.
func (s *codexServer) call(method string, params, result any) error {
	s.id++
	if err := s.send(map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method, "params": params}); err != nil {
		return err
	}
	for {
		line, err := s.out.ReadBytes('\n')
		if err != nil {
			return err
		}
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil || *m.ID != s.id {
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(m.Result, result)
	}
}

// guardHook finds flume's guard among the hooks Codex lists for dir: the
// session-flags PreToolUse hook the override gave it.
func (s *codexServer) guardHook(dir string) (codexHookInfo, error) {
	var list struct {
		Data []struct {
			Hooks  []codexHookInfo `json:"hooks"`
			Errors []struct {
				Message string `json:"message"`
			} `json:"errors"`
		} `json:"data"`
	}
	if err := s.call("hooks/list", map[string]any{"cwds": []string{dir}}, &list); err != nil {
		return codexHookInfo{}, err
	}
	var problems []error
	for _, d := range list.Data {
		for _, h := range d.Hooks {
			if h.Source == "sessionFlags" && strings.Contains(h.Key, "pre_tool_use") {
				return h, nil
			}
		}
		for _, e := range d.Errors {
			problems = append(problems, errors.New(e.Message))
		}
	}
	return codexHookInfo{}, fmt.Errorf("codex does not list flume's guard hook: %w", errors.Join(append(problems, errors.New("no session-flags PreToolUse hook"))...))
}
