package config

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Value parsers shared by the broker and topic tables. Each returns a
// message without the key; the caller wraps it in an *Error.

type integer interface{ ~int16 | ~int32 | ~int64 }

func parseInt[T integer](v string) (T, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("%q is out of range", v)
		}
		return 0, fmt.Errorf("%q is not an integer", v)
	}
	if int64(T(n)) != n {
		return 0, fmt.Errorf("%q is out of range for a %d-bit integer", v, bitsOf[T]())
	}
	return T(n), nil
}

func bitsOf[T integer]() int {
	var x T = 1
	for b := 1; ; b++ {
		x <<= 1
		if x <= 0 {
			return b + 1
		}
	}
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (true or false)", v)
}

// parseList splits a comma-separated list, trimming entries and dropping
// empty ones, as Kafka's LIST type does.
func parseList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func oneOf(v string, allowed ...string) (string, error) {
	v = strings.TrimSpace(v)
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", fmt.Errorf("%q is not one of %s", v, strings.Join(allowed, ", "))
}

var listenerName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

func parsePort(v, p string) (int, error) {
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return 0, fmt.Errorf("%q: port %q is not a number from 0 to 65535", v, p)
	}
	return port, nil
}

// parseListener parses NAME://host:port. Names are upper-cased, as Kafka
// normalises them.
func parseListener(v string) (Listener, error) {
	name, addr, ok := strings.Cut(v, "://")
	if !ok || !listenerName.MatchString(name) {
		return Listener{}, fmt.Errorf("%q is not a listener NAME://host:port", v)
	}
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return Listener{}, fmt.Errorf("%q is not a listener NAME://host:port", v)
	}
	port, err := parsePort(v, p)
	if err != nil {
		return Listener{}, err
	}
	return Listener{Name: strings.ToUpper(name), Host: host, Port: port}, nil
}

func parseListeners(v string) ([]Listener, error) {
	var out []Listener
	seen := map[string]bool{}
	for _, s := range parseList(v) {
		l, err := parseListener(s)
		if err != nil {
			return nil, err
		}
		if seen[l.Name] {
			return nil, fmt.Errorf("listener name %s appears twice", l.Name)
		}
		seen[l.Name] = true
		out = append(out, l)
	}
	return out, nil
}

func formatListeners(ls []Listener) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = l.String()
	}
	return strings.Join(s, ",")
}

// parseVoters parses id@host:port,id@host:port.
func parseVoters(v string) ([]Voter, error) {
	var out []Voter
	seen := map[int32]bool{}
	for _, s := range parseList(v) {
		id, addr, ok := strings.Cut(s, "@")
		if !ok {
			return nil, fmt.Errorf("%q is not a voter id@host:port", s)
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: voter id %q is not a non-negative integer", s, id)
		}
		host, p, err := net.SplitHostPort(addr)
		if err != nil || host == "" {
			return nil, fmt.Errorf("%q is not a voter id@host:port", s)
		}
		port, err := parsePort(s, p)
		if err != nil {
			return nil, err
		}
		if seen[int32(n)] {
			return nil, fmt.Errorf("voter id %d appears twice", n)
		}
		seen[int32(n)] = true
		out = append(out, Voter{ID: int32(n), Host: host, Port: port})
	}
	return out, nil
}

func formatVoters(vs []Voter) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.String()
	}
	return strings.Join(s, ",")
}

// securityProtocols are Kafka's protocols; only PLAINTEXT is served.
var securityProtocols = map[string]bool{"PLAINTEXT": true, "SSL": false, "SASL_PLAINTEXT": false, "SASL_SSL": false}

// parseProtocolMap parses NAME:PROTOCOL,NAME:PROTOCOL.
func parseProtocolMap(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range parseList(v) {
		name, proto, ok := strings.Cut(s, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || !listenerName.MatchString(name) {
			return nil, fmt.Errorf("%q is not NAME:PROTOCOL", s)
		}
		supported, known := securityProtocols[proto]
		switch {
		case !known:
			return nil, fmt.Errorf("%q: %q is not a security protocol", s, proto)
		case !supported:
			return nil, fmt.Errorf("%q: security protocol %s is not supported (only PLAINTEXT)", s, proto)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("listener name %s appears twice", name)
		}
		out[name] = proto
	}
	return out, nil
}

func formatProtocolMap(m map[string]string) string {
	s := make([]string, 0, len(m))
	for k, v := range m {
		s = append(s, k+":"+v)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

// parseHostPort checks an optional host:port ("" = off).
func parseHostPort(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	_, p, err := net.SplitHostPort(v)
	if err != nil {
		return "", fmt.Errorf("%q is not host:port", v)
	}
	if _, err := parsePort(v, p); err != nil {
		return "", err
	}
	return v, nil
}

var compressionTypes = []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"}

var timestampTypes = []string{"CreateTime", "LogAppendTime"}

// parseCleanupPolicy accepts delete, compact, or both comma-separated in
// either order, and returns the normal form ("compact,delete" for both).
func parseCleanupPolicy(v string) (string, error) {
	var compact, del bool
	parts := parseList(v)
	if len(parts) == 0 {
		return "", fmt.Errorf("%q is not delete, compact or compact,delete", v)
	}
	for _, p := range parts {
		switch p {
		case "compact":
			compact = true
		case "delete":
			del = true
		default:
			return "", fmt.Errorf("%q is not delete, compact or compact,delete", v)
		}
	}
	switch {
	case compact && del:
		return "compact,delete", nil
	case compact:
		return "compact", nil
	}
	return "delete", nil
}
