package gitconfig

import (
	"strconv"
	"strings"
)

// FromCount reads the settings of GIT_CONFIG_COUNT and its
// GIT_CONFIG_KEY_<n> / GIT_CONFIG_VALUE_<n>, from the environment lookup
// reads, as git lists them: section and name lowercased, a subsection as
// given. ok is false where git would refuse them (it says why).
func FromCount(lookup func(name string) (string, bool)) (entries []Entry, ok bool) {
	v, set := lookup("GIT_CONFIG_COUNT")
	if !set {
		return nil, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 1000 {
		return nil, false
	}
	for i := range n {
		key, kset := lookup("GIT_CONFIG_KEY_" + strconv.Itoa(i))
		value, vset := lookup("GIT_CONFIG_VALUE_" + strconv.Itoa(i))
		first, last := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
		if !kset || !vset || first <= 0 || last == len(key)-1 {
			return nil, false
		}
		section, name := strings.ToLower(key[:first]), strings.ToLower(key[last+1:])
		if !IsAlpha(name[0]) || strings.IndexFunc(name, func(c rune) bool { return c > 127 || !IsKeyChar(byte(c)) }) >= 0 ||
			strings.IndexFunc(section, func(c rune) bool { return c > 127 || !IsKeyChar(byte(c)) }) >= 0 {
			return nil, false
		}
		full := section + key[first:last+1] + name
		entries = append(entries, Entry{Key: full, Value: value})
	}
	return entries, true
}
