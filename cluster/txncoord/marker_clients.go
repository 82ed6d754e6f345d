package txncoord

// The inter-broker clients of the marker sender and of KIP-890's
// produce verification.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
)

// errMarkerClientsClosed: the node is stopping.
var errMarkerClientsClosed = errors.New("inter-broker transaction clients closed")

// MarkerClients are franz-go clients (for markers, and for the
// verification of transactional produces, cluster's txns_verify.go)
// pinned to one broker each (as the replica fetchers' connections,
// replication/dialer.go), kept while they work and redialled after an
// error or an address change. They reach the other brokers'
// inter-broker listener as the replica fetchers do, with the same TLS
// and SASL (Dialer). The zero value with Dialer set is ready to use.
type MarkerClients struct {
	Dialer replication.TCPDialer
	mu     sync.Mutex
	m      map[int32]*markerClient
	closed bool // no new clients once the node stops
}

type markerClient struct {
	addr string
	cl   *kgo.Client
	b    *kgo.Broker
}

func (m *MarkerClients) get(broker int32, ep metadata.Endpoint) (*markerClient, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("broker %d: %w", broker, errMarkerClientsClosed)
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	if c, ok := m.m[broker]; ok {
		if c.addr == addr {
			return c, nil
		}
		c.cl.Close()
		delete(m.m, broker)
	}
	// As the replica fetchers: an endpoint advertising another protocol
	// than this broker's inter-broker listener is refused, never dialled
	// in the clear.
	proto := ep.SecurityProtocol
	if proto == "" {
		proto = "PLAINTEXT"
	}
	if proto != m.Dialer.Protocol() {
		return nil, fmt.Errorf("broker %d: its %s listener is %s, this broker's inter-broker listener %s",
			broker, ep.Listener, proto, m.Dialer.Protocol())
	}
	// kgo negotiates the highest version both sides know, not the
	// request's own: cap it at the versions these requests are built for.
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(kmsg.WriteTxnMarkers), 1)
	vs.SetMaxKeyVersion(int16(kmsg.AddPartitionsToTxn), 4)
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("kbroker-txn-markers"), kgo.RequestRetries(0), kgo.MaxVersions(vs)}
	if m.Dialer.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(m.Dialer.TLS(ep.Host)))
	}
	if m.Dialer.SASL != nil {
		opts = append(opts, kgo.SASL(m.Dialer.SASL))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("dial broker %d at %s: %w", broker, addr, err)
	}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		cl.Close()
		return nil, fmt.Errorf("dial broker %d at %s: no broker", broker, addr)
	}
	if m.m == nil {
		m.m = map[int32]*markerClient{}
	}
	c := &markerClient{addr: addr, cl: cl, b: seeds[0]}
	m.m[broker] = c
	return c, nil
}

// WriteTxnMarkers sends req to broker, at ep.
func (m *MarkerClients) WriteTxnMarkers(ctx context.Context, broker int32, ep metadata.Endpoint, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	resp, err := m.Request(ctx, broker, ep, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.WriteTxnMarkersResponse), nil
}

// Request sends req to broker, dropping the client after an error so the
// next request dials again.
func (m *MarkerClients) Request(ctx context.Context, broker int32, ep metadata.Endpoint, req kmsg.Request) (kmsg.Response, error) {
	c, err := m.get(broker, ep)
	if err != nil {
		return nil, err
	}
	resp, err := c.b.Request(ctx, req)
	if err != nil {
		m.mu.Lock()
		if m.m[broker] == c {
			c.cl.Close()
			delete(m.m, broker)
		}
		m.mu.Unlock()
		return nil, fmt.Errorf("%s on broker %d: %w", kmsg.NameForKey(req.Key()), broker, err)
	}
	return resp, nil
}

// Close closes every client.
func (m *MarkerClients) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for id, c := range m.m {
		c.cl.Close()
		delete(m.m, id)
	}
}
