package agent

import (
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // a reset names its zone; a machine may have no zoneinfo
)

// Usage limits as the programs report them when a provider refuses more
// work until a reset: Claude Code's "Claude AI usage limit
// reached|<unix seconds>", and its later "You've hit your limit · resets
// 4:50am (Europe/Rome)", "Limit reached · resets 11:30am (Asia/Calcutta)",
// "Your limit will reset at 5pm (Europe/Warsaw)".
var (
	limitEpoch = lazyRegexp(`(?i)usage limit reached\|(\d{9,11})`)
	limitWords = lazyRegexp(`(?i)(usage limit|hit your (?:\w+ )?limit|limit reached|limit will reset)`)
	limitClock = lazyRegexp(`(?i)resets?(?: at)? (\d{1,2})(?::(\d{2}))?\s*(am|pm)(?:\s*\(([A-Za-z_]+(?:/[A-Za-z_+-]+)*)\))?`)
)

// UsageLimit reads a usage-limit report in text. It reports whether text
// is one, and the reset it names (zero when it names none it can read);
// a clock time is the next one at or after now, in the zone it names (or
// now's).
func UsageLimit(text string, now time.Time) (limited bool, reset time.Time) {
	if m := limitEpoch().FindStringSubmatch(text); m != nil {
		secs, _ := strconv.ParseInt(m[1], 10, 64)
		return true, time.Unix(secs, 0).UTC()
	}
	if !limitWords().MatchString(text) {
		return false, time.Time{}
	}
	m := limitClock().FindStringSubmatch(text)
	if m == nil {
		return true, time.Time{}
	}
	hour, _ := strconv.Atoi(m[1])
	minute, _ := strconv.Atoi(m[2])
	if hour < 1 || hour > 12 || minute > 59 {
		return true, time.Time{}
	}
	if hour == 12 {
		hour = 0
	}
	if strings.EqualFold(m[3], "pm") {
		hour += 12
	}
	loc := now.Location()
	if m[4] != "" {
		l, err := time.LoadLocation(m[4])
		if err != nil {
			return true, time.Time{}
		}
		loc = l
	}
	local := now.In(loc)
	at := time.Date(local.Year(), local.Month(), local.Day(), hour, minute, 0, 0, loc)
	if at.Before(local) {
		at = at.AddDate(0, 0, 1)
	}
	return true, at.UTC()
}
