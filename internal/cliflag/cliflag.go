package cliflag

import "strings"

// StringList collects a repeated flag (--set a=1 --set b=2), each value
// whole: a value may itself hold commas.
type StringList []string

func (s *StringList) String() string     { return strings.Join(*s, ",") }
func (s *StringList) Set(v string) error { *s = append(*s, v); return nil }

// Split is a comma-separated list (--bootstrap-server a:9092, b:9092)
// without blanks: each item is trimmed and empty ones are dropped.
func Split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
