package sasl

import (
	"fmt"
	"strings"
)

// JAASEntry is one login module of a JAAS configuration such as the value
// of sasl.jaas.config:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";
type JAASEntry struct {
	LoginModule string
	Flag        string // required, requisite, sufficient or optional
	Options     map[string]string
}

// PlainLoginModule is the login module name of Kafka's PLAIN mechanism.
const PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

// ScramLoginModule is the login module name of Kafka's SCRAM mechanisms.
const ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"

// ParseJAAS parses the sasl.jaas.config syntax: one or more
// "<module> <flag> key=value ... ;" entries. Values are words or quoted
// strings ("..." or '...') with backslash escapes; // and /* */ comments
// are skipped, as Java's StreamTokenizer does for Kafka.
func ParseJAAS(s string) ([]JAASEntry, error) {
	t := &jaasTokenizer{s: s}
	var entries []JAASEntry
	for {
		tok, err := t.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tokEOF {
			break
		}
		if tok.kind != tokWord {
			return nil, fmt.Errorf("JAAS config: expected a login module name, got %q", tok.text)
		}
		e := JAASEntry{LoginModule: tok.text, Options: map[string]string{}}
		flag, err := t.next()
		if err != nil {
			return nil, err
		}
		switch f := strings.ToLower(flag.text); {
		case flag.kind == tokWord && (f == "required" || f == "requisite" || f == "sufficient" || f == "optional"):
			e.Flag = f
		default:
			return nil, fmt.Errorf("JAAS config: invalid control flag %q for %s", flag.text, e.LoginModule)
		}
		for {
			key, err := t.next()
			if err != nil {
				return nil, err
			}
			if key.kind == tokSemi {
				break
			}
			if key.kind != tokWord {
				return nil, fmt.Errorf("JAAS config: login module %s not terminated by ';'", e.LoginModule)
			}
			if eq, err := t.next(); err != nil || eq.kind != tokEquals {
				if err != nil {
					return nil, err
				}
				return nil, fmt.Errorf("JAAS config: option %q of %s has no '=value'", key.text, e.LoginModule)
			}
			val, err := t.next()
			if err != nil {
				return nil, err
			}
			if val.kind != tokWord && val.kind != tokQuoted {
				return nil, fmt.Errorf("JAAS config: option %q of %s has no value", key.text, e.LoginModule)
			}
			e.Options[key.text] = val.text
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("JAAS config: no login module")
	}
	return entries, nil
}

// PlainJAAS is what a PlainLoginModule entry configures: the broker's own
// credentials for inter-broker connections (username, password) and the
// users it accepts (user_<name>="<password>").
type PlainJAAS struct {
	Username, Password string
	Users              PlainUsers
}

// ParsePlainJAAS parses a sasl.jaas.config value that must hold exactly
// one PlainLoginModule entry.
func ParsePlainJAAS(s string) (PlainJAAS, error) {
	entries, err := ParseJAAS(s)
	if err != nil {
		return PlainJAAS{}, err
	}
	if len(entries) != 1 || entries[0].LoginModule != PlainLoginModule {
		return PlainJAAS{}, fmt.Errorf("JAAS config for PLAIN must contain exactly one %s entry", PlainLoginModule)
	}
	out := PlainJAAS{Users: PlainUsers{}}
	for k, v := range entries[0].Options {
		switch {
		case k == "username":
			out.Username = v
		case k == "password":
			out.Password = v
		case strings.HasPrefix(k, "user_") && len(k) > len("user_"):
			out.Users[k[len("user_"):]] = v
		}
	}
	return out, nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokWord
	tokQuoted
	tokEquals
	tokSemi
	tokOther
)

type token struct {
	kind tokKind
	text string
}

type jaasTokenizer struct {
	s string
	i int
}

func isJAASWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == '$' || c >= 0x80
}

func (t *jaasTokenizer) next() (token, error) {
	for t.i < len(t.s) {
		c := t.s[t.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			t.i++
		case strings.HasPrefix(t.s[t.i:], "//"):
			for t.i < len(t.s) && t.s[t.i] != '\n' {
				t.i++
			}
		case strings.HasPrefix(t.s[t.i:], "/*"):
			end := strings.Index(t.s[t.i+2:], "*/")
			if end < 0 {
				return token{}, fmt.Errorf("JAAS config: unterminated /* comment")
			}
			t.i += 2 + end + 2
		case c == '=':
			t.i++
			return token{tokEquals, "="}, nil
		case c == ';':
			t.i++
			return token{tokSemi, ";"}, nil
		case c == '"' || c == '\'':
			return t.quoted(c)
		case isJAASWordChar(c):
			start := t.i
			for t.i < len(t.s) && isJAASWordChar(t.s[t.i]) {
				t.i++
			}
			return token{tokWord, t.s[start:t.i]}, nil
		default:
			t.i++
			return token{tokOther, string(c)}, nil
		}
	}
	return token{kind: tokEOF}, nil
}

// quoted reads a "..." or '...' string (Java's StreamTokenizer, which
// Kafka's JAAS parser uses, knows both) with backslash escapes.
func (t *jaasTokenizer) quoted(quote byte) (token, error) {
	t.i++ // opening quote
	var b strings.Builder
	for t.i < len(t.s) {
		c := t.s[t.i]
		t.i++
		switch c {
		case quote:
			return token{tokQuoted, b.String()}, nil
		case '\\':
			if t.i >= len(t.s) {
				return token{}, fmt.Errorf("JAAS config: unterminated quoted value")
			}
			e := t.s[t.i]
			t.i++
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			default:
				b.WriteByte(e) // \" \\ and any other char stand for themselves
			}
		case '\n':
			return token{}, fmt.Errorf("JAAS config: newline inside quoted value")
		default:
			b.WriteByte(c)
		}
	}
	return token{}, fmt.Errorf("JAAS config: unterminated quoted value")
}
