package metadata

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kbroker/kbroker/internal/testutil"
)

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
		return fmt.Errorf("leader is node %d (transfer: %w)", l.cfg.NodeID, err)
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

// stallingListener holds every read of the connections it accepted while
// stalled is set: the node looks paused to whoever dials it (the kernel
// accepts, nothing answers), while its own raft traffic, which it dials,
// goes on.
type stallingListener struct {
	net.Listener
	stalled *atomic.Bool
	blocked *atomic.Int32 // reads waiting
}

func (l stallingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return stallingConn{c, l.stalled, l.blocked}, nil
}

type stallingConn struct {
	net.Conn
	stalled *atomic.Bool
	blocked *atomic.Int32
}

func (c stallingConn) Read(p []byte) (int, error) {
	if c.stalled.Load() {
		c.blocked.Add(1)
		for c.stalled.Load() {
			time.Sleep(5 * time.Millisecond)
		}
		c.blocked.Add(-1)
	}
	return c.Conn.Read(p)
}

// Write holds an answer too while stalled: a read already waiting when
// the stall began (an idle pooled connection's) must not let the node
// answer, as a paused process would not.
func (c stallingConn) Write(p []byte) (int, error) {
	if c.stalled.Load() {
		c.blocked.Add(1)
		for c.stalled.Load() {
			time.Sleep(5 * time.Millisecond)
		}
		c.blocked.Add(-1)
	}
	return c.Conn.Write(p)
}

// TestForwardedOperationFollowsNewLeader: an operation forwarded to a
// leader that stops answering (paused) is sent again to the leader raft
// elects meanwhile, instead of waiting on the silent one until its
// deadline.
func TestForwardedOperationFollowsNewLeader(t *testing.T) {
	stalled := map[int32]*atomic.Bool{}
	blocked := map[int32]*atomic.Int32{}
	for id := int32(1); id <= 3; id++ {
		stalled[id], blocked[id] = new(atomic.Bool), new(atomic.Int32)
	}
	c := newTestCluster(t, 3, func(cfg *Config) {
		id := cfg.NodeID
		cfg.wrapListener = func(ln net.Listener) net.Listener {
			return stallingListener{ln, stalled[id], blocked[id]}
		}
	})
	t.Cleanup(func() {
		for _, s := range stalled {
			s.Store(false)
		}
	})
	l := c.leader()
	f := c.follower()
	stalled[l.cfg.NodeID].Store(true)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- f.RegisterBroker(ctx, BrokerRegistration{ID: 7, IncarnationID: "inc-7",
			Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9099, SecurityProtocol: "PLAINTEXT"}}})
	}()
	testutil.Eventually(t, 10*time.Second, func() error {
		if blocked[l.cfg.NodeID].Load() == 0 {
			return errors.New("no request held by the stalled leader yet")
		}
		return nil
	}, "the forwarded request reaches the stalled leader")
	if err := l.raft.LeadershipTransfer().Error(); err != nil {
		t.Fatalf("leadership transfer: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("RegisterBroker forwarded while the leader changed: %v", err)
	}
	if _, ok := c.leader().Image().Brokers[7]; !ok {
		t.Fatal("broker 7 not registered")
	}
}

// TestCallAskingAVoterFollowsTheElectedLeader: an operation sent while no
// leader was known goes to some voter; when that voter is paused and raft
// names a leader meanwhile, the call is given up at once (and retried at
// the leader) instead of being held on the paused voter until its
// deadline. A forwarded RegisterBroker hung 20 s this way when an
// election ran as it started.
func TestCallAskingAVoterFollowsTheElectedLeader(t *testing.T) {
	stalled, blocked := new(atomic.Bool), new(atomic.Int32)
	c := newTestCluster(t, 3, func(cfg *Config) {
		if cfg.NodeID == 3 {
			cfg.wrapListener = func(ln net.Listener) net.Listener {
				return stallingListener{ln, stalled, blocked}
			}
		}
	})
	t.Cleanup(func() { stalled.Store(false) })
	c.leader()
	var asker *Store // a node other than 3 that raft does not make the leader
	for _, id := range []int32{1, 2} {
		if !c.stores[id].IsController() {
			asker = c.stores[id]
		}
	}
	stalled.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	payload, _ := json.Marshal(brokerAtEpoch{BrokerID: 1})
	// known "" is the election's view: raft names a leader by the watch's
	// first tick, so the call to the paused voter must be given up.
	_, err := asker.callWhileLeaderIs(ctx, "", c.voters[2].Addr, opHeartbeat.name, payload)
	if !errors.Is(err, errLeaderMoved) {
		t.Fatalf("call to a paused voter while raft names a leader: %v, want errLeaderMoved", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the call was held until its deadline")
	}
}

// A heartbeat that unfences a broker answers the controller's image
// offset with the unfence in it: the broker waits for its own image to
// reach it before leading again.
func TestHeartbeatAnswersMetadataOffset(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := newTestCluster(t, 3, nil)
	f := c.follower()
	c.registerBrokers(ctx, f, 2)
	l := c.leader()
	epoch := l.Image().Brokers[2].Epoch
	if err := l.fenceBroker(ctx, 2, epoch, true, false); err != nil {
		t.Fatal(err)
	}
	before := l.Image().Offset
	res, err := f.BrokerHeartbeat(ctx, 2, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if res.Fenced {
		t.Fatal("still fenced after a heartbeat at the current epoch")
	}
	if res.MetadataOffset <= before {
		t.Fatalf("heartbeat answered offset %d, want past %d (the unfence record)", res.MetadataOffset, before)
	}
}

// TestControllerPingsSilentBrokers: a broker whose heartbeats stop is
// fenced long before its session times out when its node does not answer
// the controller's ping (paused), and stays unfenced when it does.
func TestControllerPingsSilentBrokers(t *testing.T) {
	stalled := map[int32]*atomic.Bool{}
	blocked := map[int32]*atomic.Int32{}
	for id := int32(1); id <= 3; id++ {
		stalled[id], blocked[id] = new(atomic.Bool), new(atomic.Int32)
	}
	c := newTestCluster(t, 3, func(cfg *Config) {
		id := cfg.NodeID
		cfg.SessionTimeout = time.Minute  // far beyond the test
		cfg.DeadReportGrace = time.Minute // no gossip here anyway
		cfg.ProbeSilence = 300 * time.Millisecond
		cfg.wrapListener = func(ln net.Listener) net.Listener {
			return stallingListener{ln, stalled[id], blocked[id]}
		}
	})
	t.Cleanup(func() {
		for _, s := range stalled {
			s.Store(false)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := c.leader()
	c.registerBrokers(ctx, l, 1, 2, 3)
	var paused, silent int32 = -1, -1
	for id := int32(1); id <= 3; id++ {
		switch {
		case id == l.cfg.NodeID:
		case paused < 0:
			paused = id
		default:
			silent = id
		}
	}
	h := startHeartbeats(c, l, l.cfg.NodeID)
	defer h.close()
	stalled[paused].Store(true)

	testutil.Eventually(t, 10*time.Second, func() error {
		if !c.leader().Image().Brokers[paused].Fenced {
			return errors.New("not fenced")
		}
		return nil
	}, "the silent broker whose node does not answer is fenced")
	if c.leader().Image().Brokers[silent].Fenced {
		t.Fatalf("broker %d, silent but answering pings, was fenced", silent)
	}
	if c.leader().Image().Brokers[l.cfg.NodeID].Fenced {
		t.Fatal("heartbeating broker fenced")
	}
}
