package fakemodel_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-flume/git-flume/internal/fakemodel"
)

var scenario = &fakemodel.Scenario{Rules: []fakemodel.Rule{
	{Match: "commit", Shell: "git commit -am x", Then: "committed"},
	{Match: "boom", Error: "overloaded"},
	{Match: "long", Cut: "I was in the middle of"},
	{Match: "drop", Drop: true},
	{Match: "edit it", Before: &fakemodel.Call{Tool: "Read", Input: map[string]any{"file_path": "a.txt"}}, Tool: "Edit", Input: map[string]any{"file_path": "a.txt"}, Then: "edited"},
	{Match: "", Text: "hello"},
}}

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	resp.Body.Close()
	return resp, b.String()
}

func TestAnthropicStreamsTextAndToolUse(t *testing.T) {
	s, err := fakemodel.Start(scenario, filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, out := post(t, s.URL+"/v1/messages", `{"model":"m","stream":true,"messages":[{"role":"user","content":"say hi"}]}`)
	for _, want := range []string{"event: message_start", `{"text":"hello","type":"text_delta"}`, `"stop_reason":"end_turn"`, "event: message_stop"} {
		if !strings.Contains(out, want) {
			t.Errorf("text reply lacks %q:\n%s", want, out)
		}
	}
	_, out = post(t, s.URL+"/v1/messages", `{"model":"m","stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":[{"type":"text","text":"please commit"}]}]}`)
	if !strings.Contains(out, `"name":"Bash"`) || !strings.Contains(out, `input_json_delta`) || !strings.Contains(out, `"stop_reason":"tool_use"`) {
		t.Errorf("tool reply:\n%s", out)
	}
	_, out = post(t, s.URL+"/v1/messages", `{"model":"m","stream":true,"tools":[{"name":"Bash"}],"messages":[
		{"role":"user","content":"please commit"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]},
		{"role":"system","content":"agent listing"}]}`)
	if !strings.Contains(out, `"text":"committed"`) {
		t.Errorf("after the tool result:\n%s", out)
	}
	resp, _ := post(t, s.URL+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"boom"}]}`)
	if resp.StatusCode != 500 {
		t.Errorf("error rule: status %d", resp.StatusCode)
	}
}

func TestChatAndResponses(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	s, err := fakemodel.Start(scenario, log)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, out := post(t, s.URL+"/v1/chat/completions", `{"model":"m","stream":true,"tools":[{"type":"function","function":{"name":"bash"}}],"messages":[{"role":"system","content":"x"},{"role":"user","content":"commit it"}]}`)
	if !strings.Contains(out, `"tool_calls"`) || !strings.Contains(out, `"finish_reason":"tool_calls"`) || !strings.Contains(out, "data: [DONE]") {
		t.Errorf("chat tool call:\n%s", out)
	}
	_, out = post(t, s.URL+"/v1/responses", `{"model":"m","stream":true,"tools":[{"name":"exec_command"}],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"commit please"}]}]}`)
	if !strings.Contains(out, `"type":"function_call"`) || !strings.Contains(out, `\"cmd\":\"git commit -am x\"`) || !strings.Contains(out, "response.completed") {
		t.Errorf("responses tool call:\n%s", out)
	}
	_, out = post(t, s.URL+"/v1/responses", `{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`)
	if !strings.Contains(out, `"delta":"hello"`) {
		t.Errorf("responses text:\n%s", out)
	}
	var n int
	resp, _ := http.Get(s.URL + "/v1/models")
	json.NewDecoder(resp.Body).Decode(&map[string]any{})
	data, _ := readLines(log)
	n = len(data)
	if n != 3 {
		t.Errorf("logged %d requests, want 3", n)
	}
}

func readLines(path string) ([]string, error) {
	data, err := osReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n"), nil
}

var osReadFile = func(p string) ([]byte, error) { return os.ReadFile(p) }

// TestCutForLength: a cut rule stops a Responses stream with
// response.incomplete for max_output_tokens, and an Anthropic reply with
// stop_reason max_tokens.
func TestCutForLength(t *testing.T) {
	s, err := fakemodel.Start(scenario, filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, out := post(t, s.URL+"/v1/responses", `{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"a long one"}]}]}`)
	if !strings.Contains(out, "response.incomplete") || !strings.Contains(out, `"reason":"max_output_tokens"`) || strings.Contains(out, "response.completed") {
		t.Errorf("responses cut:\n%s", out)
	}
	_, out = post(t, s.URL+"/v1/messages", `{"model":"m","stream":true,"messages":[{"role":"user","content":"a long one"}]}`)
	if !strings.Contains(out, `"stop_reason":"max_tokens"`) {
		t.Errorf("anthropic cut:\n%s", out)
	}
}

// TestToolBeforeTool: a rule with Before calls that tool first, then its
// own once the first's result is back, then answers Then.
func TestToolBeforeTool(t *testing.T) {
	s, err := fakemodel.Start(scenario, filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const tools = `"tools":[{"name":"Read"},{"name":"Edit"}]`
	result := func(id string) string {
		return `{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"X","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"ok"}]}`
	}
	for _, c := range []struct{ msgs, want string }{
		{`{"role":"user","content":"edit it"}`, `"name":"Read"`},
		{`{"role":"user","content":"edit it"},` + result("t1"), `"name":"Edit"`},
		{`{"role":"user","content":"edit it"},` + result("t1") + `,` + result("t2"), `"text":"edited"`},
	} {
		_, out := post(t, s.URL+"/v1/messages", `{"model":"m",`+tools+`,"messages":[`+c.msgs+`]}`)
		if !strings.Contains(out, c.want) {
			t.Errorf("after %d results: want %s in\n%s", strings.Count(c.msgs, "tool_result"), c.want, out)
		}
	}
}

// TestDropCutsTheStream: a drop rule closes the connection with the
// Responses stream unfinished.
func TestDropCutsTheStream(t *testing.T) {
	s, err := fakemodel.Start(scenario, filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := http.Post(s.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"drop it"}]}]}`))
	if err != nil {
		t.Fatalf("the headers did not come first: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil || strings.Contains(string(body), "response.completed") {
		t.Errorf("the stream ended whole (%v):\n%s", err, body)
	}
}
