package security

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/kbroker/kbroker/security/sasl"
)

// Security protocols of listener.security.protocol.map.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// ListenerSecurity is everything one listener needs to secure and
// authenticate its connections, built from the broker properties.
type ListenerSecurity struct {
	Name     string
	Protocol string
	// TLS is set for SSL and SASL_SSL.
	TLS *TLSStore
	// SASL is set for SASL_PLAINTEXT and SASL_SSL.
	SASL *sasl.Server
	// Mapper applies ssl.principal.mapping.rules on SSL listeners.
	Mapper *PrincipalMapper
}

// NewListenerSecurity reads listener's view of props (see ListenerProps)
// for the given security protocol. scram backs SCRAM mechanisms and may
// be nil when none is enabled.
func NewListenerSecurity(props map[string]string, listener, protocol string, scram sasl.CredentialStore, opts TLSOptions) (*ListenerSecurity, error) {
	view := ListenerProps(props, listener)
	l := &ListenerSecurity{Name: listener, Protocol: strings.ToUpper(protocol)}
	var err error
	switch l.Protocol {
	case ProtocolPlaintext:
	case ProtocolSSL, ProtocolSASLSSL:
		if l.TLS, err = NewTLSStore(view, opts); err != nil {
			return nil, fmt.Errorf("listener %s: %w", listener, err)
		}
		if _, err := l.TLS.ServerConfig(); err != nil {
			return nil, fmt.Errorf("listener %s: %w", listener, err)
		}
	case ProtocolSASLPlaintext:
	default:
		return nil, fmt.Errorf("listener %s: unknown security protocol %q", listener, protocol)
	}
	if l.Protocol == ProtocolSSL {
		if l.Mapper, err = ParsePrincipalMappingRules(view["ssl.principal.mapping.rules"]); err != nil {
			return nil, fmt.Errorf("listener %s: %w", listener, err)
		}
	}
	if l.Protocol == ProtocolSASLPlaintext || l.Protocol == ProtocolSASLSSL {
		if l.SASL, err = NewSASLServer(view, scram); err != nil {
			return nil, fmt.Errorf("listener %s: %w", listener, err)
		}
	}
	return l, nil
}

// Run reloads the listener's TLS files until ctx ends (a no-op wait for
// listeners without TLS).
func (l *ListenerSecurity) Run(ctx context.Context) error {
	if l.TLS == nil {
		<-ctx.Done()
		return nil
	}
	return l.TLS.Run(ctx)
}

// ServerTLS is the tls.Config for tls.NewListener, nil without TLS.
func (l *ListenerSecurity) ServerTLS() *tls.Config {
	if l.TLS == nil {
		return nil
	}
	cfg, _ := l.TLS.ServerConfig() // checked in NewListenerSecurity
	return cfg
}

// NewConn starts the per-connection security state. tlsState is the
// completed handshake on TLS listeners, nil otherwise.
func (l *ListenerSecurity) NewConn(tlsState *tls.ConnectionState) (*ConnSecurity, error) {
	c := &ConnSecurity{principal: Anonymous}
	switch l.Protocol {
	case ProtocolSSL:
		if tlsState == nil {
			return nil, fmt.Errorf("listener %s: SSL connection without a TLS handshake", l.Name)
		}
		p, err := CertificatePrincipal(tlsState.PeerCertificates, l.Mapper)
		if err != nil {
			return nil, err
		}
		c.principal = p
	case ProtocolSASLPlaintext, ProtocolSASLSSL:
		c.SASL = NewSASLAuthenticator(l.SASL)
	}
	return c, nil
}

// ConnSecurity is one connection's authentication state.
type ConnSecurity struct {
	// SASL is non-nil on SASL listeners; drive it with the connection's
	// SaslHandshake / SaslAuthenticate requests until Authenticated.
	SASL      *SASLAuthenticator
	principal Principal
}

// Authenticated reports whether requests other than ApiVersions and the
// SASL ones may be served.
func (c *ConnSecurity) Authenticated() bool {
	return c.SASL == nil || c.SASL.Authenticated()
}

// Principal is the connection's principal: User:ANONYMOUS on PLAINTEXT
// and on SSL without a client certificate, the mapped certificate DN on
// SSL, the SASL user name once a SASL exchange succeeded.
func (c *ConnSecurity) Principal() Principal {
	if c.SASL != nil {
		return c.SASL.Principal()
	}
	return c.principal
}

// NewSASLServer builds the SASL server of a listener view:
// sasl.enabled.mechanisms, and for PLAIN the users of the
// plain.sasl.jaas.config (or sasl.jaas.config) PlainLoginModule entry.
func NewSASLServer(view map[string]string, scram sasl.CredentialStore) (*sasl.Server, error) {
	mechs := splitList(view["sasl.enabled.mechanisms"])
	if len(mechs) == 0 {
		return nil, fmt.Errorf("sasl.enabled.mechanisms must name PLAIN, SCRAM-SHA-256 and/or SCRAM-SHA-512 (Kafka's default GSSAPI is not supported)")
	}
	var plain sasl.PlainVerifier
	for i, m := range mechs {
		mechs[i] = strings.ToUpper(m)
		if mechs[i] != sasl.MechanismPlain {
			continue
		}
		jaas, ok := MechanismProp(view, sasl.MechanismPlain, "sasl.jaas.config")
		if !ok {
			return nil, fmt.Errorf("PLAIN is enabled but no plain.sasl.jaas.config is set")
		}
		cfg, err := sasl.ParsePlainJAAS(jaas)
		if err != nil {
			return nil, fmt.Errorf("plain.sasl.jaas.config: %w", err)
		}
		plain = cfg.Users
	}
	return sasl.NewServer(mechs, plain, scram)
}

// InterBrokerSASL returns a factory of client sessions for connections to
// other brokers: the mechanism is sasl.mechanism.inter.broker.protocol,
// the credentials the username and password options of that mechanism's
// sasl.jaas.config (PlainLoginModule or ScramLoginModule).
func InterBrokerSASL(view map[string]string) (func() sasl.ClientSession, error) {
	return clientSASL(view, "sasl.mechanism.inter.broker.protocol")
}

// clientSASL is InterBrokerSASL with the mechanism named by mechKey.
func clientSASL(view map[string]string, mechKey string) (func() sasl.ClientSession, error) {
	mech := strings.ToUpper(strings.TrimSpace(view[mechKey]))
	if mech == "" {
		return nil, fmt.Errorf("%s is not set", mechKey)
	}
	jaas, ok := MechanismProp(view, mech, "sasl.jaas.config")
	if !ok {
		return nil, fmt.Errorf("no sasl.jaas.config for %s=%s", mechKey, mech)
	}
	entries, err := sasl.ParseJAAS(jaas)
	if err != nil {
		return nil, fmt.Errorf("%s sasl.jaas.config: %w", strings.ToLower(mech), err)
	}
	user, pass := entries[0].Options["username"], entries[0].Options["password"]
	if user == "" || pass == "" {
		return nil, fmt.Errorf("%s sasl.jaas.config: username and password are required to authenticate to other nodes", strings.ToLower(mech))
	}
	if mech == sasl.MechanismPlain {
		return func() sasl.ClientSession { return &sasl.PlainClient{User: user, Password: pass} }, nil
	}
	sm, ok := sasl.ScramMechanismByName(mech)
	if !ok {
		return nil, fmt.Errorf("%s=%s is not supported", mechKey, mech)
	}
	return func() sasl.ClientSession { return &sasl.ScramClient{Mech: sm, User: user, Password: pass} }, nil
}
