package agent

import (
	"slices"
	"strings"
)

// Reading an agent's screen (A3, A10, A11, X3). The screen is the last of an
// agent's channels: its hooks and transcript are read first. What the
// screen decides is only whether flume may type, and it fails closed:
// text is typed only into a composer recognised by its program's own
// shape, drawn at the foot of the screen with nothing over or below it
// but the program's footer. A screen that is not recognised is unknown,
// never ready; a recognised dialog is never typed into.

// Screen is what a pane shows, as far as typing into it goes (X3).
type Screen struct {
	// Ready reports the program's own input composer, idle and safe to
	// type into.
	Ready bool
	// Input reports the program's own composer at the foot of the
	// screen with nothing drawn over it: what is typed lands there (while
	// a turn runs, the program queues it). Ready implies Input.
	Input bool
	// Composer is the text already in the composer.
	Composer string
	// Busy reports a turn in progress.
	Busy bool
	// Dialog reports a screen flume recognises as a dialog of the
	// program's own (trust, onboarding, API key, update, permission):
	// never typed into, and no need to wait to know it.
	Dialog bool
	// Words is the screen's text, trimmed, for a blocked stage's reason:
	// a dialog's own lines where it is one.
	Words string
}

var (
	// A rule is a line of box drawing alone: Claude Code draws one above
	// and one below its composer, pi two around its editor.
	ruleLine = lazyRegexp(`^─{10,}\s*$`)
	// A choice is a numbered option under a selection mark, as every
	// program's dialogs draw them ("❯ 1. Yes", "› 1. Yes, proceed (y)").
	// A composer never starts so.
	choiceLine = lazyRegexp(`^[\s│┃]*[❯›>▶]\s*\d+[.)]\s`)
	// dialogWords are phrases of the programs' own dialogs (trust,
	// onboarding, API key, update, permission, login), compared in lower
	// case; dialogKeys are the key hints dialogs draw under their
	// choices. A composer shown with its footer and nothing below wins
	// over both: there they are history above it.
	dialogWords = []string{
		"trust this folder", "do you trust", "quick safety check", "trust the contents",
		"do you want to", "would you like to", "requires approval", "allow command?",
		"waiting for permission", "update available", "press enter to continue",
		"select login method", "choose the text style", "review your answers",
	}
	dialogKeys = []string{"esc to cancel", "enter to confirm", "enter to select"}
)

// maxFooter is how many non-empty lines a program draws below its
// composer (Claude Code's shortcuts line, Codex's model and cwd, pi's
// path and usage). Anything more is drawn over the composer's foot: a
// menu or a dialog, and the screen is not a composer.
const maxFooter = 4

// ReadScreen classifies a captured pane for a transcript format. It fails
// closed: only a composer of the format's own shape at the foot of the
// screen is Input; a dialog's words or a numbered choice at the foot make
// a Dialog; anything else is neither, and nothing is typed into it.
func ReadScreen(format, text string) Screen {
	lines := strings.Split(strings.TrimRight(text, " \t\n"), "\n")
	s := Screen{Words: squeeze(text)}
	s.Busy = busyMark(format, text)
	if composer, foot, ok := composerOf(format, lines); ok {
		if _, dialog := dialogAt(lines[foot:]); !dialog {
			s.Input, s.Composer = true, composer
			s.Ready = !s.Busy
			return s
		}
	}
	// No composer at the foot: a dialog is known by its marks in the
	// lower part of the screen, where programs draw them.
	from := max(len(lines)-30, 0)
	if at, dialog := dialogAt(lines[from:]); dialog {
		s.Dialog, s.Busy = true, false
		s.Words = dialogText(lines, from+at)
	}
	return s
}

// busyMark reports a turn in progress as the format's program shows it.
func busyMark(format, text string) bool {
	switch format {
	case FormatClaude, FormatCodex:
		return strings.Contains(text, "esc to interrupt")
	case FormatPi:
		return strings.Contains(text, "Working...")
	}
	return false
}

// composerOf finds the format's composer at the foot of lines: its text,
// the index of the first line below it (its footer), and whether it is
// there in its program's own shape.
func composerOf(format string, lines []string) (text string, foot int, ok bool) {
	switch format {
	case FormatClaude:
		// ─── / ❯ text / (continued) / ─── / footer: the prompt mark on
		// the line right under the upper rule.
		top, bottom, ok := lastRules(lines)
		if !ok || bottom-top < 2 || !strings.HasPrefix(lines[top+1], "❯") {
			return "", 0, false
		}
		for _, l := range lines[top+1 : bottom] {
			if choiceLine().MatchString(l) {
				return "", 0, false
			}
		}
		return strings.TrimSpace(strings.TrimPrefix(lines[top+1], "❯")), bottom + 1, true
	case FormatPi:
		top, bottom, ok := lastRules(lines)
		if !ok {
			return "", 0, false
		}
		return strings.TrimSpace(strings.Join(lines[top+1:bottom], "\n")), bottom + 1, true
	case FormatCodex:
		// › text / footer: the last prompt mark, no choice, with a footer
		// below it and nothing else: at most maxFooter lines, each
		// indented as Codex draws its status lines (the echo of a
		// submitted prompt has the turn's own lines under it, "• …").
		for i := len(lines) - 1; i >= 0; i-- {
			if l := strings.TrimLeft(lines[i], " "); strings.HasPrefix(l, "›") {
				if choiceLine().MatchString(lines[i]) || !codexFooter(lines[i+1:]) {
					return "", 0, false
				}
				return strings.TrimSpace(strings.TrimPrefix(l, "›")), i + 1, true
			}
		}
	}
	return "", 0, false
}

// codexFooter reports lines that can be Codex's footer under its
// composer: one to maxFooter non-empty lines, each indented.
func codexFooter(lines []string) bool {
	n := nonEmpty(lines)
	if n == 0 || n > maxFooter {
		return false
	}
	for _, l := range lines {
		if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "  ") {
			return false
		}
	}
	return true
}

// lastRules finds the last two rule lines of a screen, with no more than
// a footer below the lower one (pi draws its empty editor as two rules).
func lastRules(lines []string) (top, bottom int, ok bool) {
	bottom = -1
	for i := len(lines) - 1; i >= 0; i-- {
		if !ruleLine().MatchString(lines[i]) {
			continue
		}
		if bottom < 0 {
			if nonEmpty(lines[i+1:]) > maxFooter {
				return 0, 0, false
			}
			bottom = i
			continue
		}
		return i, bottom, true
	}
	return 0, 0, false
}

func nonEmpty(lines []string) int {
	n := 0
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n
}

// dialogAt finds the line of lines where a dialog shows itself: the last
// with a dialog's words, else the selected choice above the last with a
// dialog's key hints (a question's words are over its choices, not its
// keys) or that line, else the last numbered choice.
func dialogAt(lines []string) (at int, ok bool) {
	for k, marks := range [][]string{dialogWords, dialogKeys} {
		for i := len(lines) - 1; i >= 0; i-- {
			low := strings.ToLower(lines[i])
			if !slices.ContainsFunc(marks, func(w string) bool { return strings.Contains(low, w) }) {
				continue
			}
			for j := i; k == 1 && j >= max(i-12, 0); j-- {
				if choiceLine().MatchString(lines[j]) {
					return j, true
				}
			}
			return i, true
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if choiceLine().MatchString(lines[i]) {
			return i, true
		}
	}
	return 0, false
}

// dialogText is the part of a screen that is the dialog: the lines around
// line at, where the question and its choices are, from the rule a dialog
// is drawn under, not the banner at the top of the screen.
func dialogText(lines []string, at int) string {
	from, to := max(at-6, 0), min(at+6, len(lines))
	// A dialog starts under its rule: what is above is not its words.
	for i := at - 1; i >= from; i-- {
		if ruleLine().MatchString(lines[i]) {
			from = i + 1
			break
		}
	}
	return squeeze(strings.Join(lines[from:to], "\n"))
}

// frame is the box drawing around a program's screen: not words.
const frame = "─│╭╮╰╯┌┐└┘├┤┬┴┼━┃═║╔╗╚╝▌▐█╌ \t"

func squeeze(text string) string {
	var lines []string
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.Trim(l, frame); l != "" {
			lines = append(lines, l)
		}
	}
	s := strings.Join(lines, " / ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}
