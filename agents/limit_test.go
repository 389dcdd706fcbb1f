package agent

import (
	"testing"
	"time"
)

// TestUsageLimit: the shapes Claude Code reports a usage limit in, and
// the reset each names; an ordinary error is none.
func TestUsageLimit(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		text    string
		limited bool
		reset   time.Time
	}{
		{"Claude AI usage limit reached|1764582000", true, time.Unix(1764582000, 0).UTC()},
		{"You've hit your limit · resets 4:50am (Europe/Rome)", true, time.Date(2026, 12, 2, 3, 50, 0, 0, time.UTC)},
		{"You've hit your session limit · resets 12:50pm (America/Los_Angeles)", true, time.Date(2026, 12, 1, 20, 50, 0, 0, time.UTC)},
		{"Limit reached · resets 11:30am (Asia/Calcutta) · /upgrade to Max", true, time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)},
		{"Claude usage limit reached. Your limit will reset at 5pm (Europe/Warsaw).", true, time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC)},
		{"You've hit your limit · resets 10am", true, time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)},
		{"You've hit your limit", true, time.Time{}},
		{"API Error: 529 overloaded", false, time.Time{}},
		{"rate limit exceeded, retry", false, time.Time{}},
	} {
		limited, reset := UsageLimit(c.text, now)
		if limited != c.limited || !reset.Equal(c.reset) {
			t.Errorf("%q: %v %v; want %v %v", c.text, limited, reset, c.limited, c.reset)
		}
	}
}
