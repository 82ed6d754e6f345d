package replication

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/kbroker/kbroker/metadata"
)

// TCPDialer connects to a leader's endpoint with a franz-go client pinned
// to that one broker (no metadata requests, no retries: the fetcher
// handles failures itself). The request versions are negotiated with
// ApiVersions, capped at those the fetcher asks for.
//
// The endpoint is the leader's inter.broker.listener.name listener, whose
// security protocol this broker's own inter-broker listener shares: TLS
// when TLS is set, SASL when SASL is set. A leader endpoint advertising
// another protocol than the dialer is configured for is refused rather
// than dialed in the clear.
type TCPDialer struct {
	// ClientID is sent in request headers; empty: "kbroker-replica-fetcher".
	ClientID string
	// TLS returns the client config to reach host (the leader's host
	// name, for certificate verification); nil: no TLS.
	TLS func(host string) *tls.Config
	// SASL authenticates each connection; nil: none.
	SASL sasl.Mechanism
}

// Protocol is the security protocol the dialer speaks.
func (d TCPDialer) Protocol() string {
	switch {
	case d.TLS != nil && d.SASL != nil:
		return "SASL_SSL"
	case d.TLS != nil:
		return "SSL"
	case d.SASL != nil:
		return "SASL_PLAINTEXT"
	}
	return "PLAINTEXT"
}

// Dial implements LeaderDialer.
func (d TCPDialer) Dial(ctx context.Context, leader int32, ep metadata.Endpoint) (LeaderConn, error) {
	proto := ep.SecurityProtocol
	if proto == "" {
		proto = "PLAINTEXT"
	}
	if proto != d.Protocol() {
		return nil, fmt.Errorf("dial broker %d: its %s listener is %s, this broker's inter-broker listener %s",
			leader, ep.Listener, proto, d.Protocol())
	}
	id := d.ClientID
	if id == "" {
		id = "kbroker-replica-fetcher"
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(id), kgo.RequestRetries(0), kgo.MaxVersions(fetcherVersions())}
	if d.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(d.TLS(ep.Host)))
	}
	if d.SASL != nil {
		opts = append(opts, kgo.SASL(d.SASL))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("dial broker %d at %s: %w", leader, addr, err)
	}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		cl.Close()
		return nil, fmt.Errorf("dial broker %d at %s: no broker", leader, addr)
	}
	return &kgoConn{cl: cl, b: seeds[0]}, nil
}

// fetcherVersions caps the versions kgo negotiates at those the fetcher
// builds its requests for (kgo ignores a request's own Version): Fetch v12
// names topics and the replica in fields that v13+ and v15+ replace.
func fetcherVersions() *kversion.Versions {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(kmsg.Fetch), 12)
	vs.SetMaxKeyVersion(int16(kmsg.OffsetForLeaderEpoch), 4)
	return vs
}

type kgoConn struct {
	cl *kgo.Client
	b  *kgo.Broker
}

func (c *kgoConn) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	resp, err := c.b.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.FetchResponse), nil
}

func (c *kgoConn) OffsetForLeaderEpoch(ctx context.Context, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error) {
	resp, err := c.b.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.OffsetForLeaderEpochResponse), nil
}

func (c *kgoConn) Close() error {
	c.cl.Close()
	return nil
}
