package security

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// PrincipalMapper applies ssl.principal.mapping.rules (KIP-371) to a
// certificate's RFC 2253 distinguished name:
//
//	RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, DEFAULT
//
// Rules are tried in order and the first whose pattern matches the whole
// DN wins; /L and /U lower- or upper-case the result; DEFAULT keeps the DN
// as is. Patterns are Go (RE2) regular expressions, which accept the
// Java syntax Kafka's examples use but not back-references or
// look-arounds; such a rule is refused when parsed. One more difference:
// Java's replaceAll also replaces an empty match right after a non-empty
// one (pattern ".*" replaces "abc" twice), Go's does not; rules anchored
// with ^...$, as Kafka's examples are, behave identically.
type PrincipalMapper struct {
	rules []principalRule
}

type principalRule struct {
	isDefault   bool
	source      string         // pattern as written, for String
	full        *regexp.Regexp // the pattern anchored at both ends
	pattern     *regexp.Regexp
	replacement string
	hasRepl     bool
	lower       bool
	upper       bool
}

// The rule grammar, as Kafka's SslPrincipalMapper writes it: a rule is
// DEFAULT, RULE:pattern/replacement/[LU] with '\' escaping '/' inside
// pattern and replacement, or anything else (which is then rejected
// unless empty).
const principalRulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	principalRuleSplitter = regexp.MustCompile(`\s*(` + principalRulePattern + `)\s*(,\s*|$)`)
	principalRuleParser   = regexp.MustCompile(`^(?:` + principalRulePattern + `)`)
)

// ErrNoMatchingRule means no mapping rule applies to a DN; Kafka then
// fails the authentication.
var ErrNoMatchingRule = errors.New("no ssl.principal.mapping.rules rule applies")

// ParsePrincipalMappingRules parses ssl.principal.mapping.rules; an empty
// value means DEFAULT.
func ParsePrincipalMappingRules(rules string) (*PrincipalMapper, error) {
	rules = strings.TrimSpace(rules)
	if rules == "" {
		rules = "DEFAULT"
	}
	m := &PrincipalMapper{}
	for _, split := range principalRuleSplitter.FindAllStringSubmatch(rules, -1) {
		text := split[1]
		g := principalRuleParser.FindStringSubmatchIndex(text)
		if g == nil || g[1] != len(text) {
			end := 0
			if g != nil {
				end = g[1]
			}
			return nil, fmt.Errorf("ssl.principal.mapping.rules: invalid rule %q, unmatched %q", text, text[end:])
		}
		group := func(i int) (string, bool) {
			if g[2*i] < 0 {
				return "", false
			}
			return text[g[2*i]:g[2*i+1]], true
		}
		if _, ok := group(1); ok {
			m.rules = append(m.rules, principalRule{isDefault: true})
			continue
		}
		pat, ok := group(2)
		if !ok {
			continue // empty rules are ignored, as in Kafka
		}
		repl, _ := group(4)
		flag, _ := group(6)
		r := principalRule{source: pat, replacement: repl, hasRepl: true, lower: flag == "L", upper: flag == "U"}
		var err error
		if r.pattern, err = regexp.Compile(pat); err != nil {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: rule %q: %w", text, err)
		}
		r.full = regexp.MustCompile(`^(?:` + pat + `)$`)
		m.rules = append(m.rules, r)
	}
	return m, nil
}

// Name maps a distinguished name to a principal name.
func (m *PrincipalMapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		if !r.full.MatchString(dn) {
			continue
		}
		out, err := r.replaceAll(dn)
		if err != nil {
			return "", err
		}
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w to %q (rules %s)", ErrNoMatchingRule, dn, m)
}

// String writes the rules as Kafka's SslPrincipalMapper.toString does.
func (m *PrincipalMapper) String() string {
	parts := make([]string, len(m.rules))
	for i, r := range m.rules {
		if r.isDefault {
			parts[i] = "DEFAULT"
			continue
		}
		s := "RULE:" + r.source
		if r.hasRepl {
			s += "/" + r.replacement
		}
		if r.lower {
			s += "/L"
		} else if r.upper {
			s += "/U"
		}
		parts[i] = s
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// replaceAll is Java's String.replaceAll with Kafka's tweak: a $n naming a
// group the pattern does not have stays literal text.
func (r principalRule) replaceAll(s string) (string, error) {
	var b strings.Builder
	last := 0
	for _, m := range r.pattern.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(s[last:m[0]])
		if err := r.expand(&b, s, m); err != nil {
			return "", err
		}
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// expand writes the replacement for one match, in Java's syntax: \x is a
// literal x, $n and ${name} are groups. Like Java, the longest group
// number that exists is taken ($12 is group 1 then "2" with fewer than 12
// groups).
func (r principalRule) expand(b *strings.Builder, s string, m []int) error {
	groups := r.pattern.NumSubexp()
	group := func(i int) string {
		if m[2*i] < 0 {
			return ""
		}
		return s[m[2*i]:m[2*i+1]]
	}
	repl := r.replacement
	for i := 0; i < len(repl); {
		c := repl[i]
		switch {
		case c == '\\':
			if i+1 >= len(repl) {
				return fmt.Errorf("ssl.principal.mapping.rules: replacement %q ends with '\\'", repl)
			}
			b.WriteByte(repl[i+1])
			i += 2
		case c == '$' && i+1 < len(repl) && repl[i+1] == '{':
			end := strings.IndexByte(repl[i:], '}')
			if end < 0 {
				return fmt.Errorf("ssl.principal.mapping.rules: replacement %q has an unclosed ${", repl)
			}
			idx := r.pattern.SubexpIndex(repl[i+2 : i+end])
			if idx < 0 {
				return fmt.Errorf("ssl.principal.mapping.rules: replacement %q names no group %q", repl, repl[i+2:i+end])
			}
			b.WriteString(group(idx))
			i += end + 1
		case c == '$' && i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9':
			j := i + 2
			n := int(repl[i+1] - '0')
			for j < len(repl) && repl[j] >= '0' && repl[j] <= '9' {
				next, _ := strconv.Atoi(repl[i+1 : j+1])
				if next > groups {
					break
				}
				n = next
				j++
			}
			if n > groups {
				b.WriteString(repl[i:j]) // no such group: literal, as Kafka
			} else {
				b.WriteString(group(n))
			}
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return nil
}
