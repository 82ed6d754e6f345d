package metadata

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kbroker/kbroker/internal/testutil"
)

// replicaIDs lists the ids of rs.
func replicaIDs(rs []QuorumReplica) []int32 {
	out := make([]int32, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// quorumIs waits until DescribeQuorum, asked of via, shows the voters and
// observers given, and returns that description.
func quorumIs(t *testing.T, via *Store, voters, observers []int32) QuorumDescription {
	t.Helper()
	var d QuorumDescription
	testutil.Eventually(t, 15*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if d, err = via.DescribeQuorum(ctx); err != nil {
			return err
		}
		if !slices.Equal(replicaIDs(d.Voters), voters) || !slices.Equal(replicaIDs(d.Observers), observers) {
			return fmt.Errorf("voters %v observers %v", replicaIDs(d.Voters), replicaIDs(d.Observers))
		}
		return nil
	}, "quorum: voters %v, observers %v", voters, observers)
	return d
}

// A 3-voter quorum and a broker-only node 4: node 4 becomes a voter, the
// active controller is removed (handing its leadership over) while
// CreateTopics keeps being committed, every committed topic is in every
// image, and after a restart of every node the roles are what the changes
// made them: node 4 a voter, the removed node a non-voter, nobody
// bootstrapped again.
func TestQuorumAddRemoveVoter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := newTestCluster(t, 3, nil)
	c.open(4, freeAddrs(t, 1)[0])
	c.ready()
	four := c.stores[4]
	c.registerBrokers(ctx, four, 1, 2, 3, 4)

	d := quorumIs(t, four, []int32{1, 2, 3}, []int32{4})
	if l := c.leader(); d.LeaderID != l.cfg.NodeID || d.LeaderEpoch <= 0 || d.HighWatermark <= 0 {
		t.Fatalf("describe: leader %d epoch %d hw %d; raft leader %d", d.LeaderID, d.LeaderEpoch, d.HighWatermark, l.cfg.NodeID)
	}
	for _, r := range slices.Concat(d.Voters, d.Observers) {
		if r.LogEndOffset < 0 || r.LastFetchTimestamp < 0 || r.Addr == "" {
			t.Fatalf("replica %d: %+v", r.ID, r)
		}
	}

	// Metadata operations keep being committed through the changes.
	var (
		mu      sync.Mutex
		created []string
		failed  []error
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 500; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprint("t-", i)
			var errs []error
			// NOT_CONTROLLER is retried, as a Kafka client does: a
			// leadership transfer refuses proposals while it runs.
			for try := 0; try < 20; try++ {
				cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
				errs = four.CreateTopics(cctx, []TopicSpec{{Name: name, NumPartitions: 1, ReplicationFactor: 1}}, false)
				ccancel()
				if !errors.Is(errs[0], ErrNotController) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			mu.Lock()
			// A retry after a broken connection may find the topic
			// created by the first attempt.
			if errs[0] == nil || errors.Is(errs[0], ErrTopicExists) {
				created = append(created, name)
			} else {
				failed = append(failed, errs[0])
			}
			mu.Unlock()
		}
	}()
	waitCreated := func(n int) {
		t.Helper()
		testutil.Eventually(t, 15*time.Second, func() error {
			mu.Lock()
			defer mu.Unlock()
			if len(created) < n {
				return fmt.Errorf("%d topics created", len(created))
			}
			return nil
		}, "%d topics created", n)
	}
	waitCreated(5)

	// Refusals, with Kafka's meanings.
	if err := c.stores[2].AddVoter(ctx, 4, "127.0.0.1:1"); !errors.Is(err, ErrVoterChangeRefused) {
		t.Fatalf("add voter 4 at a wrong address: %v", err)
	}
	if err := c.stores[2].AddVoter(ctx, 2, ""); !errors.Is(err, ErrDuplicateVoter) {
		t.Fatalf("add voter 2 again: %v", err)
	}
	if err := c.stores[2].AddVoter(ctx, 9, ""); !errors.Is(err, ErrVoterNotReady) {
		t.Fatalf("add unknown node 9: %v", err)
	}
	if err := c.stores[2].RemoveVoter(ctx, 9); !errors.Is(err, ErrVoterNotFound) {
		t.Fatalf("remove unknown node 9: %v", err)
	}
	if err := c.stores[2].RemoveVoter(ctx, 4); !errors.Is(err, ErrVoterNotFound) {
		t.Fatalf("remove observer 4: %v", err)
	}

	start := time.Now()
	if err := c.stores[1].AddVoter(ctx, 4, ""); err != nil {
		t.Fatalf("add voter 4: %v", err)
	}
	t.Logf("AddVoter(4) took %v", time.Since(start))
	quorumIs(t, four, []int32{1, 2, 3, 4}, nil)
	waitCreated(10)

	// Remove the active controller, asked of node 4.
	old := c.leader().cfg.NodeID
	start = time.Now()
	if err := four.RemoveVoter(ctx, old); err != nil {
		t.Fatalf("remove voter %d (the leader): %v", old, err)
	}
	t.Logf("RemoveVoter(%d), the leader, took %v (leadership transfer included)", old, time.Since(start))
	var rest []int32
	for _, id := range []int32{1, 2, 3, 4} {
		if id != old {
			rest = append(rest, id)
		}
	}
	// The removed node still runs: it follows the log as an observer.
	d = quorumIs(t, four, rest, []int32{old})
	if d.LeaderID == old {
		t.Fatalf("removed node %d still leads", old)
	}
	waitCreated(15)
	close(stop)
	<-done
	mu.Lock()
	if len(failed) > 0 {
		t.Errorf("%d CreateTopics failed, first: %v", len(failed), failed[0])
	}
	names := slices.Clone(created)
	mu.Unlock()

	checkTopics := func(when string) {
		t.Helper()
		img := c.converged()
		for _, n := range names {
			if _, ok := img.Topics[n]; !ok {
				t.Fatalf("%s: committed topic %s missing from the image", when, n)
			}
		}
	}
	t.Logf("%d topics committed through the voter changes", len(names))
	checkTopics("after the changes")

	// Restart every node: the roles come from raft's configuration in the
	// log, not from Config.Voters, and nobody bootstraps.
	for _, id := range []int32{1, 2, 3, 4} {
		c.close(id)
	}
	for _, id := range []int32{1, 2, 3, 4} {
		if s := c.open(id, c.cfgs[id].BindAddr); s.bootstrapped {
			t.Fatalf("node %d bootstrapped on restart", id)
		}
	}
	c.ready()
	quorumIs(t, c.stores[old], rest, []int32{old})
	if voter, _ := c.stores[4].membership(); !voter {
		t.Fatal("node 4 is not a voter after its restart")
	}
	if voter, member := c.stores[old].membership(); voter || !member {
		t.Fatalf("removed node %d after restart: voter %v, member %v", old, voter, member)
	}
	checkTopics("after the restart")

	// A removal that would leave no live majority is refused: with one of
	// the three voters down, removing another leaves one of two.
	var down, target int32 = -1, -1
	lid := c.leader().cfg.NodeID
	for _, id := range rest {
		switch {
		case id == lid:
		case down < 0:
			down = id
		default:
			target = id
		}
	}
	c.close(down)
	if err := c.stores[lid].RemoveVoter(ctx, target); !errors.Is(err, ErrVoterChangeRefused) {
		t.Fatalf("remove voter %d with voter %d down: %v", target, down, err)
	}
}

// The last voter cannot be removed.
func TestQuorumLastVoter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := newTestCluster(t, 1, nil)
	if err := c.stores[1].RemoveVoter(ctx, 1); !errors.Is(err, ErrVoterChangeRefused) {
		t.Fatalf("remove the last voter: %v", err)
	}
	d, err := c.stores[1].DescribeQuorum(ctx)
	if err != nil || !slices.Equal(replicaIDs(d.Voters), []int32{1}) || d.Voters[0].LogEndOffset < d.HighWatermark {
		t.Fatalf("describe: %+v %v", d, err)
	}
}

// A voter removed while it was down restarts with a log that still names
// it a voter: nobody answers it, so after leaderlessRejoin without a
// leader it finds the quorum no longer lists it and follows the log as a
// non-voter, without becoming a voter again.
func TestQuorumVoterRemovedWhileDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.leaderlessRejoin = 500 * time.Millisecond })
	l := c.leader()
	var gone int32
	var rest []int32
	for _, v := range c.voters {
		if v.ID != l.cfg.NodeID && gone == 0 {
			gone = v.ID
		} else {
			rest = append(rest, v.ID)
		}
	}
	c.close(gone)
	if err := l.RemoveVoter(ctx, gone); err != nil {
		t.Fatalf("remove voter %d while it is down: %v", gone, err)
	}
	c.registerBrokers(ctx, l, 1)
	// Its log names it a voter (unless the leader's last attempt to
	// replicate the removal to it reaches it after the restart, which
	// happens now and then: then it has nothing to repair).
	back := c.open(gone, c.cfgs[gone].BindAddr)
	quorumIs(t, l, rest, []int32{gone})
	testutil.Eventually(t, 10*time.Second, func() error {
		if voter, member := back.membership(); voter || !member {
			return fmt.Errorf("voter %v member %v", voter, member)
		}
		return nil
	}, "node %d knows it is a non-voter", gone)
	if img := c.converged(); img.Brokers[1] == nil {
		t.Fatal("the registration is missing")
	}
}

// Over mutual TLS, a node added as a voter may speak raft: once it leads,
// the voters accept its AppendEntries although controller.quorum.voters
// (Config.Voters) does not name it, so proposals commit.
func TestQuorumAddedVoterLeadsOverTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ca := newTestCA(t, "quorum-ca")
	c := newTestCluster(t, 3, withMutualTLS(t, ca))
	four := c.open(4, freeAddrs(t, 1)[0])
	c.ready()
	c.registerBrokers(ctx, four, 4)
	if err := four.AddVoter(ctx, 4, ""); err != nil {
		t.Fatalf("add voter 4: %v", err)
	}
	testutil.Eventually(t, 15*time.Second, func() error {
		l := c.leader()
		if l == four {
			return nil
		}
		if err := l.raft.LeadershipTransferToServer(serverID(4), raft.ServerAddress(four.advertise)).Error(); err != nil {
			return err
		}
		return errors.New("node 4 does not lead yet")
	}, "node 4 leads")
	for _, id := range []int32{1, 2} {
		if errs := c.stores[id].CreateTopics(ctx, []TopicSpec{{Name: fmt.Sprint("led-by-4-via-", id), NumPartitions: 1, ReplicationFactor: 1}}, false); errs[0] != nil {
			t.Fatalf("create via node %d with node 4 leading: %v", id, errs[0])
		}
	}
	// Refused by the voters, node 4 would lose its leader lease and the
	// others would have elected one of theirs to commit the topics.
	if !four.IsController() {
		t.Fatal("node 4 lost the leadership: the voters did not accept its raft connections")
	}
}
