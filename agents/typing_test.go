package agent

import (
	"context"
	"strings"
	"testing"
)

// screenPane is a pane host whose screen is fixed and which records what
// was typed.
type screenPane struct {
	gone   bool
	screen string
	typed  []string
}

func (p *screenPane) Start(context.Context, string, string, []string, []string) (int, error) {
	return 1, nil
}
func (p *screenPane) Alive(context.Context, string) bool { return !p.gone }
func (p *screenPane) Capture(context.Context, string) (string, error) {
	return p.screen, nil
}
func (p *screenPane) Send(_ context.Context, _ string, text string) error {
	p.typed = append(p.typed, "text:"+text)
	return nil
}
func (p *screenPane) SendKeys(_ context.Context, _ string, keys ...string) error {
	p.typed = append(p.typed, "keys:"+strings.Join(keys, " "))
	return nil
}
func (p *screenPane) Kill(context.Context, string) error    { return nil }
func (p *screenPane) Check(context.Context, []string) error { return nil }

// claudeBox is Claude Code's composer as it draws it: rules above and
// below the prompt mark and its text, a footer line under them.
func claudeBox(text, footer string) string {
	return "● earlier output\n────────────────────\n❯ " + text + "\n────────────────────\n  " + footer + "\n"
}

// TestResendPromptTypesOnlyIntoTheReadyComposer_A3_X3: a prompt that did
// not show in the transcript is sent once more only to a program whose
// screen is its ready composer, never a third time, and never typed twice
// when it already sits in the composer. Stages and the workspace worker
// both resend through it.
func TestResendPromptTypesOnlyIntoTheReadyComposer_A3_X3(t *testing.T) {
	const prompt = "Fix the parser.\nThen commit."
	for _, c := range []struct {
		name  string
		pane  screenPane
		sends int
		want  Resent
		typed string
	}{
		{"exited", screenPane{gone: true}, 1, Resent{Exited: true}, ""},
		{"busy", screenPane{screen: "✻ Thinking…\n" + claudeBox("", "esc to interrupt")}, 1, Resent{Busy: true}, ""},
		{"trust dialog", screenPane{screen: "Do you trust the files in this folder?\n❯ 1. Yes"}, 1, Resent{Blocked: "Do you trust the files in this folder? / ❯ 1. Yes"}, ""},
		{"sent twice already", screenPane{screen: claudeBox("", "? for shortcuts")}, 2, Resent{GaveUp: true}, ""},
		{"empty composer", screenPane{screen: claudeBox("", "? for shortcuts")}, 1, Resent{Sent: true}, "text:" + prompt},
		{"prompt left in the composer", screenPane{screen: claudeBox("Fix the parser.", "? for shortcuts")}, 1, Resent{Sent: true}, "keys:Enter"},
		// The composer's mark alone, not in its box: unknown, never typed into.
		{"a bare mark", screenPane{screen: "❯ "}, 1, Resent{Blocked: "❯"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			pane := c.pane
			got, err := ResendPrompt(context.Background(), &pane, "p", FormatClaude, prompt, c.sends)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
			if typed := strings.Join(pane.typed, "|"); typed != c.typed {
				t.Errorf("typed %q, want %q", typed, c.typed)
			}
		})
	}
}

// TestTellWaitsForTheComposer_X3: a follow-up is typed into a ready
// composer only; a busy agent gets it later, a dialog blocks with its words.
func TestTellWaitsForTheComposer_X3(t *testing.T) {
	ctx := context.Background()
	busy := &screenPane{screen: "✻ Working (esc to interrupt)"}
	if sent, blocked, err := Tell(ctx, busy, "p", FormatClaude, "hurry"); sent || blocked != "" || err != nil || len(busy.typed) > 0 {
		t.Fatalf("busy: sent %v blocked %q err %v typed %v", sent, blocked, err, busy.typed)
	}
	dialog := &screenPane{screen: "Update available! Press Enter to continue"}
	if sent, blocked, _ := Tell(ctx, dialog, "p", FormatClaude, "hurry"); sent || !strings.Contains(blocked, "Update available") || len(dialog.typed) > 0 {
		t.Fatalf("dialog: sent %v blocked %q typed %v", sent, blocked, dialog.typed)
	}
	ready := &screenPane{screen: claudeBox("", "? for shortcuts")}
	if sent, _, _ := Tell(ctx, ready, "p", FormatClaude, "hurry"); !sent || strings.Join(ready.typed, "") != "text:hurry" {
		t.Fatalf("ready: sent %v typed %v", sent, ready.typed)
	}
}

// TestEndScreenKeepsTheLastWords_A3: what a program that ended left on its
// pane is its last three lines with a word in them, without the borders and
// prompts around them, clipped from the front; nothing when the host kept
// no screen.
func TestEndScreenKeepsTheLastWords_A3(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ screen, want string }{
		{"Welcome\n╭────╮\nchecking the key\n\nError: invalid API key\n  Please run /login  \n❯\n╰────╯\n\n", "checking the key / Error: invalid API key / Please run /login"},
		{"one\n\n", "one"},
		{"──\n❯ \n", ""},
		{strings.Repeat("x", 300), "…" + strings.Repeat("x", 240)},
	} {
		if got := EndScreen(ctx, &screenPane{screen: c.screen}, "p"); got != c.want {
			t.Errorf("EndScreen(%q) = %q, want %q", c.screen, got, c.want)
		}
	}
	if got := EndScreen(ctx, &screenPane{gone: true}, "p"); got != "" {
		t.Errorf("a pane with no screen: %q", got)
	}
}
