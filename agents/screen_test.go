package agent

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// screenCorpus is every screen under testdata/screens, captured from the
// real programs (make test-agents, pinned versions) with tmux
// capture-pane, and what each must read as. A screen is "composer"
// (Ready), "busy" (Input, a turn runs), "dialog" (never typed into, its
// words holding want) or "unknown".
var screenCorpus = []struct {
	file, format, class, words string
}{
	// Claude Code 2.1.197: its composers; its dialogs for a file created,
	// edited and overwritten, a shell command, a fetch, leaving plan mode,
	// a question of its own, trusting a folder, an API key found in the
	// environment, and the resume picker.
	{"claude/idle-composer.txt", FormatClaude, "composer", ""},
	{"claude/interrupted-composer.txt", FormatClaude, "composer", ""},
	{"claude/busy-composer.txt", FormatClaude, "busy", ""},
	{"claude/write-permission.txt", FormatClaude, "dialog", "Do you want to create notes.txt?"},
	{"claude/bash-permission.txt", FormatClaude, "dialog", "Do you want to proceed?"},
	{"claude/webfetch-permission.txt", FormatClaude, "dialog", "Do you want to allow Claude to fetch this content?"},
	{"claude/edit-permission.txt", FormatClaude, "dialog", "Do you want to make this edit to notes.txt?"},
	{"claude/overwrite-permission.txt", FormatClaude, "dialog", "Do you want to overwrite notes.txt?"},
	{"claude/plan-approval.txt", FormatClaude, "dialog", "Exit plan mode?"},
	{"claude/ask-user-question.txt", FormatClaude, "dialog", "Which database should I use?"},
	{"claude/trust-folder.txt", FormatClaude, "dialog", "Yes, I trust this folder"},
	{"claude/custom-api-key.txt", FormatClaude, "dialog", "Do you want to use this API key?"},
	{"claude/resume-picker.txt", FormatClaude, "dialog", "No conversations found in this project."},
	// Codex 0.171.0: idle, and idle with a command left in the background.
	{"codex/idle-composer.txt", FormatCodex, "composer", ""},
	{"codex/background-composer.txt", FormatCodex, "composer", ""},
	// Codex's own dialogs: a command it asks to run outside its sandbox
	// (its choices drawn with the composer's own mark), a folder to trust.
	{"codex/command-approval.txt", FormatCodex, "dialog", "Would you like to run the following command?"},
	{"codex/trust-folder.txt", FormatCodex, "dialog", "Trust this folder?"},
	// pi 0.73.1 (no dialogs of its own): idle, and at work.
	{"pi/idle-composer.txt", FormatPi, "composer", ""},
	{"pi/busy-composer.txt", FormatPi, "busy", ""},
}

func readCorpus(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "screens", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func classOf(s Screen) string {
	switch {
	case s.Dialog:
		return "dialog"
	case s.Ready:
		return "composer"
	case s.Input && s.Busy:
		return "busy"
	}
	return "unknown"
}

// TestReadScreenKnowsTheRealScreens_A11: every captured screen reads as
// what it is; a permission dialog's words are the program's own question.
// Claude Code's file-create dialog draws "❯ 1. Yes", the
// composer's own mark: it must read as a dialog, never a composer.
func TestReadScreenKnowsTheRealScreens_A11(t *testing.T) {
	for _, c := range screenCorpus {
		s := ReadScreen(c.format, readCorpus(t, c.file))
		if got := classOf(s); got != c.class {
			t.Errorf("%s reads as %s, want %s (words %q)", c.file, got, c.class, s.Words)
		}
		if c.words != "" && !strings.Contains(s.Words, c.words) {
			t.Errorf("%s: words %q lack the dialog's question %q", c.file, s.Words, c.words)
		}
	}
}

// TestTypingReachesOnlyComposers_X3 is the property behind X3: over the
// corpus and screens made from it (a dialog drawn at a composer's foot, a
// screen cut anywhere, lines dropped, a composer's rules taken away),
// Tell types only where the screen is the program's own composer, and
// never where the corpus or the change made a dialog or took the
// composer's shape.
func TestTypingReachesOnlyComposers_X3(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(41, 41))
	var dialogs []string
	for _, c := range screenCorpus {
		if c.class == "dialog" {
			dialogs = append(dialogs, readCorpus(t, c.file))
		}
	}
	tried := 0
	for _, c := range screenCorpus {
		screen := readCorpus(t, c.file)
		lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
		var variants []string
		// A dialog's foot drawn below the composer: a permission prompt
		// that opened while the composer still shows.
		for _, d := range dialogs {
			dl := strings.Split(strings.TrimRight(d, "\n "), "\n")
			variants = append(variants, screen+"\n"+strings.Join(dl[len(dl)-5:], "\n"))
		}
		// Cut anywhere, and lines dropped at random.
		for range 40 {
			variants = append(variants, strings.Join(lines[:rng.IntN(len(lines))], "\n"))
			kept := make([]string, 0, len(lines))
			for _, l := range lines {
				if rng.IntN(6) != 0 {
					kept = append(kept, l)
				}
			}
			variants = append(variants, strings.Join(kept, "\n"))
		}
		for _, v := range variants {
			tried++
			pane := &screenPane{screen: v}
			sent, _, err := Tell(ctx, pane, "p", c.format, "hello")
			if err != nil {
				t.Fatal(err)
			}
			s := ReadScreen(c.format, v)
			if sent && !composerShape(c.format, v) {
				t.Fatalf("typed into a screen without the composer's shape (from %s):\n%s", c.file, v)
			}
			if sent && (hasDialogFoot(v) || c.class == "dialog") {
				t.Fatalf("typed into a dialog (from %s):\n%s", c.file, v)
			}
			if s.Ready != sent {
				t.Fatalf("Ready %v but typed %v (from %s)", s.Ready, sent, c.file)
			}
		}
	}
	if tried < 300 {
		t.Fatalf("only %d screens tried", tried)
	}
}

// composerShape is the test's own, independent reading of Claude Code's
// composer: the last three non-footer lines are rule, "❯ …", rule.
func composerShape(format, screen string) bool {
	if format != FormatClaude {
		return true
	}
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	for i := len(lines) - 1; i >= 2; i-- {
		if strings.HasPrefix(lines[i], "──────────") {
			return strings.HasPrefix(lines[i-2], "──────────") && strings.HasPrefix(lines[i-1], "❯")
		}
	}
	return false
}

// hasDialogFoot reports a screen whose last lines are a dialog's choices.
func hasDialogFoot(screen string) bool {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	for _, l := range lines[max(len(lines)-5, 0):] {
		if strings.Contains(l, "1. Yes") || strings.Contains(l, "Esc to cancel") {
			return true
		}
	}
	return false
}
