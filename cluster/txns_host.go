package cluster

// The transaction coordinator's view of the Node (txnsHost), and the
// inter-broker clients its marker sender uses.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
)

type txnsNodeHost struct {
	n       *Node
	clients *markerClients
}

func (h txnsNodeHost) Image() *metadata.Image { return h.n.store.Image() }

func (h txnsNodeHost) StateReplica(p int32) (offsetsReplica, error) {
	part, err := h.n.replicas.Partition(replication.TopicPartition{Topic: txnStateTopic, Partition: p})
	if err != nil {
		return nil, err
	}
	return partitionReplica{part}, nil
}

func (h txnsNodeHost) CreateStateTopic(ctx context.Context, spec metadata.TopicSpec) error {
	err := h.n.store.CreateTopics(ctx, []metadata.TopicSpec{spec}, false)[0]
	if err != nil && !errors.Is(err, metadata.ErrTopicExists) {
		return err
	}
	if aerr := h.n.replicas.Apply(h.n.store.Image()); aerr != nil {
		h.n.logger.Warn("opening "+txnStateTopic+" partitions", "component", "txns", "err", aerr)
	}
	return err
}

func (h txnsNodeHost) AllocateProducerID(ctx context.Context) (int64, error) {
	return h.n.producerIDs.allocate(ctx)
}

func (h txnsNodeHost) WriteTxnMarkers(ctx context.Context, broker int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	if broker == h.n.cfg.NodeID {
		return h.n.writeTxnMarkers(ctx, req), nil
	}
	ep, ok := h.n.store.Image().BrokerEndpoint(broker, h.n.cfg.InterBrokerListenerName)
	if !ok {
		return nil, fmt.Errorf("broker %d has no %s endpoint", broker, h.n.cfg.InterBrokerListenerName)
	}
	return h.clients.writeTxnMarkers(ctx, broker, ep, req)
}

// txnsConfigOf is the coordinator's part of a node's config.
func txnsConfigOf(n *Node) txnsConfig {
	return txnsConfig{
		NumPartitions:     n.cfg.TransactionStateLogNumPartitions,
		ReplicationFactor: n.cfg.TransactionStateLogReplicationFactor,
		MinISR:            n.cfg.TransactionStateLogMinISR,
		MaxTimeout:        time.Duration(n.cfg.TransactionMaxTimeoutMs) * time.Millisecond,
		IDExpiration:      time.Duration(n.cfg.TransactionalIDExpirationMs) * time.Millisecond,
		AbortInterval:     time.Duration(n.cfg.TransactionAbortTimedOutTransactionCleanupIntervalMs) * time.Millisecond,
	}
}

// errMarkerClientsClosed: the node is stopping.
var errMarkerClientsClosed = errors.New("inter-broker transaction clients closed")

// markerClients are franz-go clients (for markers, and for the
// verification of transactional produces, txns_verify.go) pinned to one broker each (as the
// replica fetchers' connections, replication/dialer.go), kept while they
// work and redialled after an error or an address change. They reach the
// other brokers' inter-broker listener as the replica fetchers do, with
// the same TLS and SASL (dialer).
type markerClients struct {
	dialer replication.TCPDialer
	mu     sync.Mutex
	m      map[int32]*markerClient
	closed bool // no new clients once the node stops
}

type markerClient struct {
	addr string
	cl   *kgo.Client
	b    *kgo.Broker
}

func (m *markerClients) get(broker int32, ep metadata.Endpoint) (*markerClient, error) {
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
	if proto != m.dialer.Protocol() {
		return nil, fmt.Errorf("broker %d: its %s listener is %s, this broker's inter-broker listener %s",
			broker, ep.Listener, proto, m.dialer.Protocol())
	}
	// kgo negotiates the highest version both sides know, not the
	// request's own: cap it at the versions these requests are built for.
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(kmsg.WriteTxnMarkers), 1)
	vs.SetMaxKeyVersion(int16(kmsg.AddPartitionsToTxn), 4)
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("kbroker-txn-markers"), kgo.RequestRetries(0), kgo.MaxVersions(vs)}
	if m.dialer.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(m.dialer.TLS(ep.Host)))
	}
	if m.dialer.SASL != nil {
		opts = append(opts, kgo.SASL(m.dialer.SASL))
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

func (m *markerClients) writeTxnMarkers(ctx context.Context, broker int32, ep metadata.Endpoint, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	resp, err := m.request(ctx, broker, ep, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.WriteTxnMarkersResponse), nil
}

// request sends req to broker, dropping the client after an error so the
// next request dials again.
func (m *markerClients) request(ctx context.Context, broker int32, ep metadata.Endpoint, req kmsg.Request) (kmsg.Response, error) {
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

// close closes every client.
func (m *markerClients) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for id, c := range m.m {
		c.cl.Close()
		delete(m.m, id)
	}
}
