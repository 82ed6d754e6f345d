package config

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
)

// maxConnectionsPerIPOverridesKey is max.connections.per.ip.overrides:
// comma-separated host:count, where host is an IP address or a host name
// (resolved when the broker starts), as in Kafka.
var maxConnectionsPerIPOverridesKey = brokerKey{
	name: "max.connections.per.ip.overrides", def: "",
	doc: "Comma-separated host:count overriding max.connections.per.ip for an IP address or host name.",
	parse: func(b *builder, v string) (err error) {
		b.MaxConnectionsPerIPOverrides, err = parseConnectionOverrides(v)
		return err
	},
	format: func(c *Config) string { return formatConnectionOverrides(c.MaxConnectionsPerIPOverrides) },
}

func parseConnectionOverrides(v string) (map[string]int32, error) {
	out := map[string]int32{}
	for _, s := range parseList(v) {
		// The count follows the last colon, so IPv6 hosts need no brackets.
		i := strings.LastIndexByte(s, ':')
		if i <= 0 {
			return nil, fmt.Errorf("%q is not host:count", s)
		}
		host := strings.Trim(strings.TrimSpace(s[:i]), "[]")
		n, err := strconv.ParseInt(strings.TrimSpace(s[i+1:]), 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: count must be a number from 0 to %d", s, int32(^uint32(0)>>1))
		}
		if ip := net.ParseIP(host); ip != nil {
			host = ip.String() // one spelling per address
		}
		if _, dup := out[host]; dup {
			return nil, fmt.Errorf("host %s appears twice", host)
		}
		out[host] = int32(n)
	}
	return out, nil
}

func formatConnectionOverrides(m map[string]int32) string {
	s := make([]string, 0, len(m))
	for k, v := range m {
		s = append(s, k+":"+strconv.FormatInt(int64(v), 10))
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}
