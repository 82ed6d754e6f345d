package metadata

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kbroker/kbroker/internal/testutil"
)

// A controller operation returns once its record is committed; the node
// that forwarded it (here a non-voter, which is not needed for the
// commit) may not have applied it yet. After CatchUp it has, every time.
func TestCatchUpAfterForwardedWrite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := newTestCluster(t, 3, nil)
	c.converged()
	b := c.open(4, freeAddrs(t, 1)[0])
	c.ready()
	c.registerBrokers(ctx, c.leader(), 1, 2, 3)
	for i := range 20 {
		name := fmt.Sprint("caught-up-", i)
		if errs := b.CreateTopics(ctx, []TopicSpec{{Name: name, NumPartitions: 3, ReplicationFactor: 2}}, false); errs[0] != nil {
			t.Fatalf("create %s via the non-voter: %v", name, errs[0])
		}
		if err := b.CatchUp(ctx); err != nil {
			t.Fatalf("catch up after creating %s: %v", name, err)
		}
		if tp := b.Image().Topics[name]; tp == nil || len(tp.Partitions) != 3 {
			t.Fatalf("non-voter image after CatchUp lacks %s (at offset %d)", name, b.Image().Offset)
		}
	}
}

// TestFollowersApplyCommitsAtOnce: the other nodes apply a commit without
// waiting for the leader's next AppendEntries on its own schedule
// (CommitTimeout, here longer than the test): the controller announces
// its commits, or brokers would learn of every election, ISR change and
// new topic 50-100 ms after the controller at the default.
func TestFollowersApplyCommitsAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.tuneRaft = func(rc *raft.Config) {
			clusterRaft(rc)
			rc.CommitTimeout = time.Hour
		}
	})
	l := c.leader()
	c.registerBrokers(ctx, l, 1)
	for i := range 3 {
		name := fmt.Sprint("announced-", i)
		if errs := l.CreateTopics(ctx, []TopicSpec{{Name: name, NumPartitions: 1, ReplicationFactor: 1}}, false); errs[0] != nil {
			t.Fatalf("create %s: %v", name, errs[0])
		}
		testutil.Eventually(t, 10*time.Second, func() error {
			for id, s := range c.stores {
				if s.Image().Topics[name] == nil {
					return fmt.Errorf("node %d has not applied %s", id, name)
				}
			}
			return nil
		}, "every node applies %s", name)
	}
}
