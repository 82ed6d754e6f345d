package replication

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/metadata"
)

// TCPDialer connects to a leader's endpoint over plaintext TCP with a
// franz-go client pinned to that one broker (no metadata requests, no
// retries: the fetcher handles failures itself). The request versions are
// negotiated with ApiVersions, capped at those the fetcher asks for.
type TCPDialer struct {
	// ClientID is sent in request headers; empty: "kbroker-replica-fetcher".
	ClientID string
}

// Dial implements LeaderDialer.
func (d TCPDialer) Dial(ctx context.Context, leader int32, ep metadata.Endpoint) (LeaderConn, error) {
	if ep.SecurityProtocol != "" && ep.SecurityProtocol != "PLAINTEXT" {
		return nil, fmt.Errorf("dial broker %d: security protocol %s not supported for replication", leader, ep.SecurityProtocol)
	}
	id := d.ClientID
	if id == "" {
		id = "kbroker-replica-fetcher"
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(id),
		kgo.RequestRetries(0))
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
