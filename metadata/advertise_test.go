package metadata

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kbroker/kbroker/internal/testutil"
)

func TestParseHostPort(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string // "" for nil
		wantErr bool
	}{
		{in: "kb1:9093", want: "kb1:9093"},
		{in: "127.0.0.1:9093", want: "127.0.0.1:9093"},
		{in: "[::1]:9093", want: "[::1]:9093"},
		{in: "kb1:0"},
		{in: "kb1", wantErr: true},
		{in: ":9093", wantErr: true},
		{in: "kb1:http", wantErr: true},
		{in: "kb1:70000", wantErr: true},
	} {
		a, err := parseHostPort(tc.in)
		switch {
		case tc.wantErr:
			if err == nil {
				t.Errorf("%q: got %v, want an error", tc.in, a)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.want == "" && a != nil:
			t.Errorf("%q: got %v, want nil", tc.in, a)
		case tc.want != "" && (a == nil || a.String() != tc.want):
			t.Errorf("%q: got %v, want %s", tc.in, a, tc.want)
		}
	}
}

// TestLeaderAdvertisesConfiguredName: the address raft carries as the
// leader's, which followers dial to forward controller operations, is
// the voter's configured host name, not the IP it resolved to at start
// (a container keeps its name across network reconnects, not its IP).
func TestLeaderAdvertisesConfiguredName(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) {
		vs := make([]Voter, len(cfg.Voters))
		for i, v := range cfg.Voters {
			vs[i] = Voter{ID: v.ID, Addr: strings.Replace(v.Addr, "127.0.0.1", "localhost", 1)}
		}
		cfg.Voters = vs
	})
	l := c.leader()
	want := strings.Replace(c.voters[l.cfg.NodeID-1].Addr, "127.0.0.1", "localhost", 1)
	testutil.Eventually(t, 10*time.Second, func() error {
		for id, s := range c.stores {
			if s == l {
				continue
			}
			if got, _ := s.raft.LeaderWithID(); string(got) != want {
				return fmt.Errorf("node %d: raft names the leader at %q, want %q", id, got, want)
			}
		}
		return nil
	}, "followers know the leader by name")
}

// TestStaleLeaderAddress: the leader's raft messages carry an address
// that now belongs to another node (here node 3: the leader advertises
// it, as a node that resolved its name at start would after its IP moved
// to node 3). Followers still reach the leader at its configured
// address, and a restarted node 3, which the stale address names, gets
// past WaitReady instead of asking itself for the read index forever.
func TestStaleLeaderAddress(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	// Node 1 restarts advertising node 3's address.
	c.close(1)
	cfg := c.cfgs[1]
	cfg.AdvertiseAddr = c.voters[2].Addr
	c.cfgs[1] = cfg
	c.open(1, c.voters[0].Addr)
	c.ready()
	// Make node 1 the leader.
	testutil.Eventually(t, 20*time.Second, func() error {
		l := c.leader()
		if l.cfg.NodeID == 1 {
			return nil
		}
		err := l.raft.LeadershipTransferToServer(serverID(1), raft.ServerAddress(c.voters[0].Addr)).Error()
		return fmt.Errorf("leader is node %d (transfer: %v)", l.cfg.NodeID, err)
	}, "node 1 leads")

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// A forwarded operation from a follower reaches node 1.
	c.registerBrokers(ctx, c.stores[2], 2)

	c.close(3)
	s3 := c.open(3, c.voters[2].Addr)
	if err := s3.WaitReady(ctx); err != nil {
		t.Fatalf("restarted node 3: %v", err)
	}
	if _, err := s3.Heartbeat(ctx, 2, s3.Image().Brokers[2].Epoch); err != nil {
		t.Fatalf("heartbeat forwarded from node 3: %v", err)
	}
}
