package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// EnvPrefix starts every environment variable Load reads.
const EnvPrefix = "KBROKER_"

// EnvName returns the environment variable that sets key:
// "log.dirs" → "KBROKER_LOG_DIRS".
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Load returns the configuration from, in increasing precedence, the
// properties file (path "" for none), the KBROKER_ variables in env
// (os.Environ format), and sets ("key=value", one per --set flag), over the
// defaults. The result is validated.
func Load(file string, env []string, sets []string) (Config, error) {
	given := map[string]setting{}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
		props, err := ParseProperties(data)
		if err != nil {
			return Config{}, fmt.Errorf("config: %s:%w", file, err)
		}
		for _, p := range props {
			src := file + ":" + strconv.Itoa(p.Line)
			if err := put(given, p.Key, p.Value, src); err != nil {
				return Config{}, err
			}
		}
	}
	byEnv := make(map[string]string, len(keys))
	for _, k := range keys {
		byEnv[EnvName(k.name)] = k.name
	}
	for name := range ignoredIndex {
		byEnv[EnvName(name)] = name
	}
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) {
			continue
		}
		key, known := byEnv[name]
		if !known {
			key = strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, EnvPrefix), "_", "."))
		}
		if err := put(given, key, value, "env "+name); err != nil {
			return Config{}, err
		}
	}
	for _, s := range sets {
		key, value, ok := strings.Cut(s, "=")
		if !ok {
			return Config{}, fmt.Errorf("config: --set %q: want key=value: %w", s, ErrInvalid)
		}
		if err := put(given, strings.TrimSpace(key), value, "--set"); err != nil {
			return Config{}, err
		}
	}
	c, err := build(given)
	if err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func put(given map[string]setting, key, value, source string) error {
	_, known := keyIndex[key]
	if _, ignored := ignoredIndex[key]; !known && !ignored && !isListenerSecurityKey(key) {
		return &Error{Key: key, Source: source, Err: ErrUnknownKey}
	}
	given[key] = setting{value: strings.TrimSpace(value), source: source}
	return nil
}

// Property is one key and value of a Java .properties text.
type Property struct {
	Key, Value string
	Line       int // where the logical line starts, from 1
}

// ParseProperties reads Java .properties text: # and ! comment lines,
// key=value, key:value or key value, whitespace trimmed around the key and
// before the value, backslash line continuation and backslash escapes
// (\t \n \r \f \uXXXX, any other \c is c). Later duplicates win at merge.
// Errors name the line, never its text: a value may be a password.
func ParseProperties(data []byte) ([]Property, error) {
	var out []Property
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		start := lineNo
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if start == 1 {
			line = strings.TrimPrefix(line, "\uFEFF")
		}
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Join continuation lines: a line ending in an odd number of
		// backslashes continues on the next, whose leading space is dropped.
		for endsWithContinuation(line) {
			line = line[:len(line)-1]
			if !sc.Scan() {
				break
			}
			lineNo++
			line += strings.TrimLeft(sc.Text(), " \t\f")
		}
		key, value := splitProperty(line)
		k, err := unescape(key)
		if err != nil {
			return nil, fmt.Errorf("%d: %w", start, err)
		}
		v, err := unescape(value)
		if err != nil {
			return nil, fmt.Errorf("%d: %w", start, err)
		}
		out = append(out, Property{Key: k, Value: strings.TrimRight(v, " \t\f"), Line: start})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%d: %w", lineNo+1, err)
	}
	return out, nil
}

func endsWithContinuation(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line at the first unescaped '=', ':' or
// whitespace; whitespace and at most one '=' or ':' separate key and value.
func splitProperty(line string) (key, value string) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i > len(line) {
		i = len(line)
	}
	key, rest := line[:i], line[i:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", errors.New("malformed \\u escape")
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", errors.New("malformed \\u escape")
			}
			b.WriteRune(rune(n))
			i += 4
		default:
			_, size := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+size])
			i += size - 1
		}
	}
	return b.String(), nil
}
