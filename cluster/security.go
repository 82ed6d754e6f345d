package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/security"
	"github.com/kbroker/kbroker/security/sasl"
)

// nodeSecurity is the node's security, built from its config once, in
// NewNode: the client listeners, the identity brokers are recognised by,
// the inter-broker client side and the controller listener's mutual TLS.
type nodeSecurity struct {
	listeners map[string]*server.ListenerSecurity // by listener name, client listeners only

	// superUsers are the principals of super.users ("User:admin").
	superUsers map[string]bool
	// brokerPrincipals may fetch as followers: super.users, the user of
	// sasl.mechanism.inter.broker.protocol's JAAS entry and the principal
	// of this broker's own inter-broker certificate.
	brokerPrincipals map[string]bool
	// interBrokerSecure is false when the inter-broker listener is
	// PLAINTEXT: then nothing is authenticated and any connection may
	// fetch as a follower, as before security.
	interBrokerSecure bool
	dialer            replication.TCPDialer

	// Controller listener with SSL: mutual TLS for raft and the
	// controller RPCs (metadata.Config).
	controllerTLS *security.TLSStore
	controllerMap *security.PrincipalMapper
	// controllerSASL is set with SASL_PLAINTEXT/SASL_SSL on the
	// controller listener (controllerTLS too with SASL_SSL).
	controllerSASL *metadata.ControllerSASL

	// reloaders run each TLS store's file watch (Run).
	reloaders []func(context.Context) error
}

// newNodeSecurity builds the security of every listener of cfg; scram
// backs the SCRAM mechanisms.
func newNodeSecurity(cfg *config.Config, scram sasl.CredentialStore, logger *slog.Logger) (*nodeSecurity, error) {
	props := cfg.SecurityProps()
	opts := security.TLSOptions{Logger: logger.With("component", "tls")}
	s := &nodeSecurity{
		listeners:        map[string]*server.ListenerSecurity{},
		superUsers:       map[string]bool{},
		brokerPrincipals: map[string]bool{},
	}
	for _, u := range cfg.SuperUsers {
		s.superUsers[u] = true
		s.brokerPrincipals[u] = true
	}
	for _, l := range cfg.Listeners {
		if isController(cfg, l.Name) {
			continue
		}
		proto := cfg.ListenerProtocol(l.Name)
		ls, err := security.NewListenerSecurity(props, l.Name, proto, scram, opts)
		if err != nil {
			return nil, err
		}
		reauth, err := listenerReauth(cfg, props, l.Name)
		if err != nil {
			return nil, err
		}
		s.listeners[l.Name] = &server.ListenerSecurity{Name: l.Name, Sec: ls, Reauth: reauth}
		if ls.TLS != nil {
			s.reloaders = append(s.reloaders, ls.Run)
		}
	}
	if cfg.IsBroker() {
		if err := s.interBroker(cfg, props); err != nil {
			return nil, err
		}
	}
	if err := s.controller(cfg, props, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// listenerReauth is connections.max.reauth.ms for one listener: its
// listener.name.<l>. value, else the broker's.
func listenerReauth(cfg *config.Config, props map[string]string, listener string) (time.Duration, error) {
	ms := cfg.ConnectionsMaxReauthMs
	key := "listener.name." + strings.ToLower(listener) + ".connections.max.reauth.ms"
	if v, ok := props[key]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s: %q is not a non-negative integer", key, v)
		}
		ms = n
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// interBroker sets up the client side of connections to other brokers
// (the follower fetchers) from the inter-broker listener's protocol and
// properties: its truststore and keystore for TLS, and for SASL the
// mechanism of sasl.mechanism.inter.broker.protocol with this broker's
// own JAAS credentials.
func (s *nodeSecurity) interBroker(cfg *config.Config, props map[string]string) error {
	name := cfg.InterBrokerListenerName
	ls := s.listeners[name]
	if ls == nil {
		return fmt.Errorf("inter.broker.listener.name %s is not a client listener", name)
	}
	s.interBrokerSecure = ls.Sec.Protocol != security.ProtocolPlaintext
	if st := ls.Sec.TLS; st != nil {
		s.dialer.TLS = st.ClientConfig
		if c := st.Certificate(); c != nil && len(c.Certificate) > 0 && ls.Sec.Mapper != nil {
			leaf, err := x509.ParseCertificate(c.Certificate[0])
			if err != nil {
				return fmt.Errorf("listener %s: own certificate: %w", name, err)
			}
			p, err := security.CertificatePrincipal([]*x509.Certificate{leaf}, ls.Sec.Mapper)
			if err != nil {
				return fmt.Errorf("listener %s: own certificate principal: %w", name, err)
			}
			s.brokerPrincipals[p.String()] = true
		}
	}
	if ls.Sec.SASL != nil {
		view := security.ListenerProps(props, name)
		newSession, err := security.InterBrokerSASL(view)
		if err != nil {
			return fmt.Errorf("inter-broker listener %s: %w", name, err)
		}
		probe := newSession()
		s.brokerPrincipals[security.User(clientUser(probe)).String()] = true
		s.dialer.SASL = kgoMechanism{name: probe.Mechanism(), newSession: newSession}
	}
	return nil
}

// clientUser is the user name a client session authenticates as.
func clientUser(c sasl.ClientSession) string {
	switch c := c.(type) {
	case *sasl.PlainClient:
		return c.User
	case *sasl.ScramClient:
		return c.User
	}
	return ""
}

// controller sets up the controller listener: with SSL, mutual TLS for
// every node (metadata.Config.ServerTLS/ClientTLS) from its listener.name.
// view, and peers recognised by authorizePeer.
func (s *nodeSecurity) controller(cfg *config.Config, props map[string]string, opts security.TLSOptions) error {
	if len(cfg.ControllerListenerNames) == 0 {
		return nil
	}
	name := cfg.ControllerListenerNames[0]
	view := security.ListenerProps(props, name)
	switch p := cfg.ListenerProtocol(name); p {
	case security.ProtocolPlaintext:
		return nil
	case security.ProtocolSSL:
	case security.ProtocolSASLPlaintext, security.ProtocolSASLSSL:
		return s.controllerSASLSetup(name, p, view, opts)
	default:
		return fmt.Errorf("controller listener %s: security protocol %s is not supported", name, p)
	}
	view["ssl.client.auth"] = "required" // every peer is a node with a certificate
	// Raft dials its peers at IP addresses (the transport resolves the
	// voters' host names), which node certificates rarely name. The
	// client side therefore checks the chain and then that the peer is a
	// node (controllerClientTLS), not the host name.
	view["ssl.endpoint.identification.algorithm"] = ""
	st, err := security.NewTLSStore(view, opts)
	if err != nil {
		return fmt.Errorf("controller listener %s: %w", name, err)
	}
	if _, err := st.ServerConfig(); err != nil {
		return fmt.Errorf("controller listener %s: %w", name, err)
	}
	if st.Certificate() == nil {
		return fmt.Errorf("controller listener %s: a keystore is needed to connect to the other nodes", name)
	}
	if s.controllerMap, err = security.ParsePrincipalMappingRules(view["ssl.principal.mapping.rules"]); err != nil {
		return fmt.Errorf("controller listener %s: %w", name, err)
	}
	if len(s.superUsers) == 0 {
		return fmt.Errorf("controller listener %s is SSL: super.users must list the nodes' certificate principals", name)
	}
	s.controllerTLS = st
	s.reloaders = append(s.reloaders, st.Run)
	return nil
}

// controllerSASLSetup sets up a SASL_PLAINTEXT or SASL_SSL controller
// listener: every node authenticates with sasl.mechanism.controller.protocol
// and its JAAS credentials (inside TLS with SASL_SSL), and only
// super.users may speak (authorizeControllerUser).
func (s *nodeSecurity) controllerSASLSetup(name, proto string, view map[string]string, opts security.TLSOptions) error {
	server, client, err := security.ControllerSASL(view)
	if err != nil {
		return fmt.Errorf("controller listener %s: %w", name, err)
	}
	if len(s.superUsers) == 0 {
		return fmt.Errorf("controller listener %s is %s: super.users must list the nodes' SASL principals", name, proto)
	}
	if proto == security.ProtocolSASLSSL {
		// As with SSL: raft dials IP addresses, so the chain is checked,
		// not the host name; the peer proves itself with SASL.
		view["ssl.endpoint.identification.algorithm"] = ""
		st, err := security.NewTLSStore(view, opts)
		if err != nil {
			return fmt.Errorf("controller listener %s: %w", name, err)
		}
		if _, err := st.ServerConfig(); err != nil {
			return fmt.Errorf("controller listener %s: %w", name, err)
		}
		s.controllerTLS = st
		s.reloaders = append(s.reloaders, st.Run)
	}
	s.controllerSASL = &metadata.ControllerSASL{
		Start:         func(m string) (metadata.SASLServerSession, error) { return server.Start(m) },
		Client:        func() metadata.SASLClientSession { return client() },
		AuthorizeUser: s.authorizeControllerUser,
	}
	return nil
}

// authorizeControllerUser lets a SASL-authenticated user speak on the
// controller listener when User:<name> is in super.users. A name ending
// in a number (broker-2) is bound to that node id, as certificate
// principals are; a name all nodes share (Kafka's usual "admin") may act
// for any node.
func (s *nodeSecurity) authorizeControllerUser(user string) (int32, bool, bool) {
	if !s.superUsers[security.User(user).String()] {
		return -1, false, false
	}
	if id, ok := nodeIDOf(user); ok {
		return id, true, true
	}
	return -1, false, true
}

// applyMetadata wires the controller listener's mutual TLS or SASL into mc.
func (s *nodeSecurity) applyMetadata(mc *metadata.Config) {
	if s.controllerSASL != nil {
		mc.SASL = s.controllerSASL
		if s.controllerTLS != nil {
			mc.ServerTLS, _ = s.controllerTLS.ServerConfig() // checked in controllerSASLSetup
			mc.ClientTLS = s.controllerTLS.ClientConfig("")
		}
		return
	}
	if s.controllerTLS == nil {
		return
	}
	mc.ServerTLS, _ = s.controllerTLS.ServerConfig() // checked in controller
	mc.ClientTLS = s.controllerClientTLS()
	mc.AuthorizePeer = s.authorizePeer
}

// controllerClientTLS dials other nodes' controller listeners: this node
// presents its certificate, and the peer's certificate must chain to the
// truststore (with the server-auth usage) and map, as authorizePeer maps
// its clients, to a node: a super.users principal ending in a node id.
func (s *nodeSecurity) controllerClientTLS() *tls.Config {
	cfg := s.controllerTLS.ClientConfig("")
	chain := cfg.VerifyConnection // set: host names are not verified
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if err := chain(cs); err != nil {
			return err
		}
		if _, ok := s.authorizePeer(cs); !ok {
			p, _ := security.CertificatePrincipal(cs.PeerCertificates, s.controllerMap)
			return fmt.Errorf("controller listener peer %s is not a node: not in super.users or no node id at the end of its name", p)
		}
		return nil
	}
	return cfg
}

// authorizePeer maps a controller-listener peer to its node id. Its
// certificate principal (after ssl.principal.mapping.rules) must be in
// super.users, and the node id is the number its principal name ends
// with: User:CN=kb2 (kbroker tls init's certificate for host kb2) is node
// 2, User:broker-12 is node 12. A principal with no trailing number is
// refused.
func (s *nodeSecurity) authorizePeer(st tls.ConnectionState) (int32, bool) {
	p, err := security.CertificatePrincipal(st.PeerCertificates, s.controllerMap)
	if err != nil || !s.superUsers[p.String()] {
		return -1, false
	}
	return nodeIDOf(p.Name)
}

// nodeIDOf is the decimal number name ends with.
func nodeIDOf(name string) (int32, bool) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	id, err := strconv.ParseInt(name[i:], 10, 32)
	if err != nil {
		return -1, false
	}
	return int32(id), true
}

// run reloads every TLS store's files until ctx ends.
func (s *nodeSecurity) run(ctx context.Context, wg *sync.WaitGroup, logger *slog.Logger) {
	for _, r := range s.reloaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r(ctx); err != nil && ctx.Err() == nil {
				logger.Error("TLS reloader stopped", "err", err)
			}
		}()
	}
}

// fetchPeer is what the connection vouches for about the sender of a
// follower fetch. With a PLAINTEXT inter-broker listener nothing is
// authenticated, so any connection may fetch as a broker (as in Kafka
// without an authorizer); otherwise only a broker principal may (see
// nodeSecurity.brokerPrincipals). The replica manager still checks the
// claimed replica against the image.
func (n *Node) fetchPeer(rc *server.RequestContext) replication.FetchPeer {
	s := n.security
	if !s.interBrokerSecure {
		return replication.FetchPeer{Broker: true}
	}
	return replication.FetchPeer{Broker: s.brokerPrincipals[rc.Principal.String()]}
}

// kgoMechanism runs this package's SASL client sessions inside franz-go,
// which the follower fetchers connect with (it also re-authenticates
// when the leader's connections.max.reauth.ms ends a session).
type kgoMechanism struct {
	name       string
	newSession func() sasl.ClientSession
}

func (m kgoMechanism) Name() string { return m.name }

func (m kgoMechanism) Authenticate(context.Context, string) (kgosasl.Session, []byte, error) {
	c := m.newSession()
	first, err := c.Start()
	if err != nil {
		return nil, nil, err
	}
	return kgoSession{c}, first, nil
}

type kgoSession struct{ c sasl.ClientSession }

func (s kgoSession) Challenge(challenge []byte) (bool, []byte, error) {
	resp, done, err := s.c.Step(challenge)
	return done, resp, err
}

// InterBrokerClientOpts are the franz-go options that reach a broker's
// inter-broker listener the way cfg's follower fetchers do (TLS and SASL
// with this broker's own credentials); kbroker healthcheck uses them.
// serverName is the name the listener's certificate must carry.
func InterBrokerClientOpts(cfg *config.Config, serverName string) ([]kgo.Opt, error) {
	s, err := newNodeSecurity(cfg, sasl.ScramCredentials{}, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	var opts []kgo.Opt
	if s.dialer.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(s.dialer.TLS(serverName)))
	}
	if s.dialer.SASL != nil {
		opts = append(opts, kgo.SASL(s.dialer.SASL))
	}
	return opts, nil
}
