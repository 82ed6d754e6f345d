package config

import (
	"errors"
	"maps"
	"regexp"
	"strings"
)

// Security keys are Kafka's names for TLS and SASL (package security
// interprets them). They are kept verbatim in Config.Security, and only
// when given: an ssl.endpoint.identification.algorithm set to "" means
// something else than one not set at all.
//
// Each may also be given for one listener as
// listener.name.<listener>.<key>, which wins over <key> for that listener,
// and a listener's SASL mechanism may have its own JAAS entry:
// listener.name.<listener>.<mechanism>.sasl.jaas.config (mechanism
// lower-case: plain, scram-sha-256, scram-sha-512).

// securityKeyDocs lists the security keys with their description; the
// sensitive ones are never shown (DescribeConfigs returns null).
var securityKeyDocs = []struct {
	name, doc string
	sensitive bool
}{
	{"ssl.keystore.type", "Keystore format; only PEM (JKS/PKCS12: convert, see Security).", false},
	{"ssl.keystore.location", "PEM file with the private key and its certificate chain; reloaded when it changes.", false},
	{"ssl.keystore.key", "The private key in PEM, inline (instead of ssl.keystore.location).", true},
	{"ssl.keystore.certificate.chain", "The certificate chain in PEM, inline (with ssl.keystore.key).", true},
	{"ssl.keystore.password", "Refused with PEM keystores (as Kafka); use ssl.key.password.", true},
	{"ssl.key.password", "Password of an encrypted PEM private key (PKCS#8).", true},
	{"ssl.truststore.type", "Truststore format; only PEM.", false},
	{"ssl.truststore.location", "PEM file of trusted CA certificates; none means the system roots.", false},
	{"ssl.truststore.certificates", "Trusted CA certificates in PEM, inline.", true},
	{"ssl.truststore.password", "Refused with PEM truststores (as Kafka).", true},
	{"ssl.client.auth", "Client certificates on SSL/SASL_SSL listeners: none, requested or required.", false},
	{"ssl.enabled.protocols", "TLS versions: TLSv1.2, TLSv1.3 (default both).", false},
	{"ssl.protocol", "TLS, TLSv1.2 or TLSv1.3; accepted for compatibility (ssl.enabled.protocols decides).", false},
	{"ssl.cipher.suites", "TLS 1.2 cipher suites by IANA name; empty is Go's secure defaults.", false},
	{"ssl.endpoint.identification.algorithm", "https (default): inter-broker clients check the peer's host name; empty: only its chain.", false},
	{"ssl.principal.mapping.rules", "Rules (RULE:pattern/replacement/[LU], DEFAULT) that turn a client certificate's DN into the principal name.", false},
	{"sasl.enabled.mechanisms", "SASL mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512.", false},
	{"sasl.mechanism.inter.broker.protocol", "Mechanism brokers authenticate to each other with when the inter-broker listener is SASL.", false},
	{"sasl.mechanism.controller.protocol", "Mechanism nodes authenticate to each other's controller listener with when it is SASL_PLAINTEXT or SASL_SSL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); credentials are the username/password of that mechanism's sasl.jaas.config on the controller listener.", false},
	{"sasl.jaas.config", "JAAS entry: PlainLoginModule with user_<name>=\"password\" options for PLAIN; username/password are this broker's own inter-broker credentials.", true},
}

var securityKeys = func() []brokerKey {
	out := make([]brokerKey, 0, len(securityKeyDocs)+2)
	for _, d := range securityKeyDocs {
		name := d.name
		out = append(out, brokerKey{
			name: name, derived: true, sensitive: d.sensitive,
			doc:    d.doc + " May be prefixed listener.name.<listener>.",
			parse:  func(b *builder, v string) error { b.setSecurity(name, v); return nil },
			format: func(c *Config) string { return c.Security[name] },
		})
	}
	return append(out,
		brokerKey{
			name: "super.users", def: "",
			doc: "Semicolon-separated principals (User:admin;User:CN=kb1) allowed every action whatever the ACLs; broker principals here may fetch as followers and speak on the controller listener.",
			parse: func(b *builder, v string) error {
				b.SuperUsers = nil
				for _, p := range strings.Split(v, ";") {
					if p = strings.TrimSpace(p); p != "" {
						b.SuperUsers = append(b.SuperUsers, p)
					}
				}
				return nil
			},
			format: func(c *Config) string { return strings.Join(c.SuperUsers, ";") },
			check: func(c *Config) error {
				for _, p := range c.SuperUsers {
					if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
						return invalid("super.users", "%q is not Type:name (User:admin)", p)
					}
				}
				return nil
			},
		},
		intKey("connections.max.reauth.ms", "0", "Longest a SASL session lasts (KIP-368): clients must re-authenticate within it or the connection is closed; 0 is unbounded. May be prefixed listener.name.<listener>.", 0,
			func(c *Config) *int64 { return &c.ConnectionsMaxReauthMs }),
	)
}()

func (b *builder) setSecurity(key, value string) {
	if b.Security == nil {
		b.Security = map[string]string{}
	}
	b.Security[key] = value
}

// listenerKey matches listener.name.<listener>.<rest>.
var listenerKey = regexp.MustCompile(`^listener\.name\.([a-z0-9_-]+)\.(.+)$`)

// saslMechanismPrefixes are the mechanisms a JAAS entry may be given for.
var saslMechanismPrefixes = []string{"plain.", "scram-sha-256.", "scram-sha-512."}

// isListenerSecurityKey reports whether key is a listener.name.<l>.
// variant of a security key, and returns its base key.
func listenerSecurityBase(key string) (listener, base string, ok bool) {
	m := listenerKey.FindStringSubmatch(key)
	if m == nil {
		return "", "", false
	}
	rest := m[2]
	for _, p := range saslMechanismPrefixes {
		if r, ok := strings.CutPrefix(rest, p); ok && r == "sasl.jaas.config" {
			return m[1], r, true
		}
	}
	if rest == "connections.max.reauth.ms" {
		return m[1], rest, true
	}
	for _, d := range securityKeyDocs {
		if d.name == rest {
			return m[1], rest, true
		}
	}
	return "", "", false
}

func isListenerSecurityKey(key string) bool {
	_, _, ok := listenerSecurityBase(key)
	return ok
}

// IsSensitive reports whether a broker key's value is secret (passwords,
// private keys, JAAS entries, also under a listener.name. prefix).
func IsSensitive(key string) bool {
	if _, base, ok := listenerSecurityBase(key); ok {
		key = base
	}
	if k, ok := keyIndex[key]; ok {
		return k.sensitive
	}
	return false
}

// SecurityProps is the flat property view package security reads: every
// ssl.* and sasl.* key given, with its listener.name. variants, and the
// connections.max.reauth.ms default. The caller may modify it.
func (c *Config) SecurityProps() map[string]string {
	out := maps.Clone(c.Security)
	if out == nil {
		out = map[string]string{}
	}
	return out
}

// ListenerProtocol is the security protocol of a listener (from
// listener.security.protocol.map; PLAINTEXT when absent).
func (c *Config) ListenerProtocol(name string) string {
	if p, ok := c.ListenerSecurityProtocolMap[strings.ToUpper(name)]; ok {
		return p
	}
	return "PLAINTEXT"
}

// listenerSecurityEntries describes the listener.name. security keys
// given, for DescribeConfigs.
func (c *Config) listenerSecurityEntries() []ConfigEntry {
	var out []ConfigEntry
	for k, v := range c.Security {
		if _, ok := keyIndex[k]; ok {
			continue
		}
		e := ConfigEntry{Name: k, Value: v, Source: SourceStaticBroker, ReadOnly: true, Sensitive: IsSensitive(k)}
		if e.Sensitive {
			e.Value = ""
		}
		out = append(out, e)
	}
	return out
}

// validateSecurity checks the security keys against the listeners (names
// is the set of listener names).
func (c *Config) validateSecurity(names map[string]bool) error {
	var errs []error
	for k := range c.Security {
		l, _, ok := listenerSecurityBase(k)
		if !ok {
			continue
		}
		if !names[strings.ToUpper(l)] {
			errs = append(errs, invalid(k, "listener %s is not in listeners", strings.ToUpper(l)))
		}
	}
	for _, name := range c.ControllerListenerNames {
		switch p := c.ListenerProtocol(name); p {
		case "SASL_PLAINTEXT", "SASL_SSL":
			// Kafka's default is GSSAPI, which kbroker does not have.
			m, ok := c.Security["listener.name."+strings.ToLower(name)+".sasl.mechanism.controller.protocol"]
			if !ok {
				m = c.Security["sasl.mechanism.controller.protocol"]
			}
			switch m := strings.ToUpper(strings.TrimSpace(m)); m {
			case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
			default:
				errs = append(errs, invalid("sasl.mechanism.controller.protocol",
					"%q: the controller listener %s is %s; set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", m, name, p))
			}
		}
	}
	return errors.Join(errs...)
}
