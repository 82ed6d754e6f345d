package security

import (
	"strings"
)

// ListenerProps returns the properties as one listener sees them: every
// key, with listener.name.<listener>.<key> (listener name lower-cased, as
// Kafka writes it) overriding <key>. Keys of other listeners are dropped.
func ListenerProps(props map[string]string, listener string) map[string]string {
	prefix := "listener.name." + strings.ToLower(listener) + "."
	out := make(map[string]string, len(props))
	for k, v := range props {
		if !strings.HasPrefix(k, "listener.name.") {
			out[k] = v
		}
	}
	for k, v := range props {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = v
		}
	}
	return out
}

// MechanismProp returns a SASL mechanism's own value of key in a listener
// view: <mechanism lower-case>.<key> (e.g. "scram-sha-256.sasl.jaas.config",
// from listener.name.<l>.scram-sha-256.sasl.jaas.config) wins over <key>.
func MechanismProp(view map[string]string, mechanism, key string) (string, bool) {
	if v, ok := view[strings.ToLower(mechanism)+"."+key]; ok {
		return v, true
	}
	v, ok := view[key]
	return v, ok
}

func prop(view map[string]string, key string) string {
	return strings.TrimSpace(view[key])
}

// splitList splits a Kafka list value on commas, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
