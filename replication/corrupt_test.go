package replication

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// flipInBatch flips a bit inside the records of the batch holding offset
// in a node's first segment of tp0, as a bad sector would.
func flipInBatch(t *testing.T, n *testNode, offset int64) {
	t.Helper()
	path := filepath.Join(n.dir, tp0.String(), "00000000000000000000.log")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for pos := 0; pos < len(data); {
		b, _, err := record.Parse(data[pos:])
		if err != nil {
			t.Fatalf("parse at %d: %v", pos, err)
		}
		if b.BaseOffset() <= offset && offset <= b.LastOffset() {
			data[pos+record.HeaderSize+2] ^= 0x04
			if err := os.WriteFile(path, data, 0o640); err != nil {
				t.Fatal(err)
			}
			return
		}
		pos += len(b)
	}
	t.Fatalf("no batch holds offset %d", offset)
}

// TestCorruptBatchOnFollowerIsRefetched: a follower whose log holds a
// batch failing its CRC truncates to it as soon as a read finds it and
// fetches the tail again: its log ends byte for byte the leader's.
func TestCorruptBatchOnFollowerIsRefetched(t *testing.T) {
	c := newTestCluster(t, 1, 2)
	c.images.elect(t, "orders", 0, []int32{1, 2}, 1, 1, 2)
	n1, n2 := c.start(1), c.start(2)
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := n1.m.LeaderPartition(tp0); return err == nil }, "leader")
	n1.produce(t, tp0, -1, 30, "a")
	testutil.Eventually(t, 10*time.Second, caughtUp(t, n1, n2), "follower caught up")

	flipInBatch(t, n2, 12)
	fp := n2.partition(t, tp0)
	// What a consumer fetching from the follower or the scrubber does.
	if _, err := fp.log.Read(10, 1<<20, math.MaxInt64, true); !errors.Is(err, storage.ErrCorruptSegment) {
		t.Fatalf("read of the corrupt batch: %v", err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		return fp.LogEndOffset() == 30 && slices.Equal(n1.segmentBytes(t, tp0), n2.segmentBytes(t, tp0))
	}, "the follower refetched its corrupt tail")
	if _, err := fp.log.Read(0, 1<<20, math.MaxInt64, true); err != nil {
		t.Fatalf("read after the repair: %v", err)
	}
	if n := n2.logs.Corruptions().Count(); n != 1 {
		t.Fatalf("corrupt batches counted %d, want 1", n)
	}
	if p, err := n2.m.Partition(tp0); err != nil || p.IsLeader() {
		t.Fatalf("follower after the repair: %v", err)
	}
}

// TestCorruptBatchOnLeader: a leader whose log holds a batch failing its
// CRC never serves it (KAFKA_STORAGE_ERROR to the consumer), stops
// leading and lists the replica offline for the controller. When another
// ISR member is elected it truncates to the corrupt batch and follows,
// ending byte for byte the new leader's; as the only in-sync replica it
// stays offline with its log untouched.
func TestCorruptBatchOnLeader(t *testing.T) {
	for _, tc := range []struct {
		name     string
		isr      []int32
		failover bool
	}{
		{"another ISR member takes over", []int32{1, 2}, true},
		{"only in-sync replica stays offline", []int32{1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCluster(t, 1, 2)
			c.lagMax = time.Hour
			c.images.elect(t, "orders", 0, []int32{1, 2}, 1, tc.isr...)
			n1 := c.start(1)
			var n2 *testNode
			if tc.failover {
				n2 = c.start(2)
			}
			testutil.Eventually(t, 10*time.Second, func() bool { _, err := n1.m.LeaderPartition(tp0); return err == nil }, "leader")
			n1.produce(t, tp0, -1, 30, "a")
			if tc.failover {
				testutil.Eventually(t, 10*time.Second, caughtUp(t, n1, n2), "follower caught up")
			}
			lp := n1.partition(t, tp0)
			flipInBatch(t, n1, 7)

			_, err := lp.Read(5, 1<<20, true) // a consumer's fetch
			if KafkaError(err) != kerr.KafkaStorageError || !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("consumer read of the corrupt batch: %v, want KAFKA_STORAGE_ERROR", err)
			}
			testutil.Eventually(t, 10*time.Second, func() bool {
				_, err := n1.m.Partition(tp0)
				return KafkaError(err) == kerr.KafkaStorageError
			}, "the leader stops serving the partition")
			if lp.IsLeader() {
				t.Fatal("the partition a request holds still says it leads")
			}
			if got := n1.m.OfflineReplicas(); !slices.Equal(got, []TopicPartition{tp0}) {
				t.Fatalf("offline replicas %v", got)
			}
			if !tc.failover {
				// Nothing else leads: a new image keeps it offline, and
				// the acknowledged records after the corrupt batch stay.
				c.images.elect(t, "orders", 0, []int32{1, 2}, 1, 1)
				c.waitApplied(t, n1)
				if _, err := n1.m.Partition(tp0); KafkaError(err) != kerr.KafkaStorageError {
					t.Fatalf("partition after a new image: %v", err)
				}
				l, _ := n1.logs.Get(tp0.Topic, tp0.Partition)
				if l.LogEndOffset() != 30 {
					t.Fatalf("log end offset %d, want 30 (untouched)", l.LogEndOffset())
				}
				return
			}
			// The controller elects the other ISR member (metadata
			// offline_replicas.go).
			c.images.elect(t, "orders", 0, []int32{1, 2}, 2, 2)
			testutil.Eventually(t, 10*time.Second, func() bool { _, err := n2.m.LeaderPartition(tp0); return err == nil }, "new leader")
			n2.produce(t, tp0, -1, 5, "b")
			testutil.Eventually(t, 10*time.Second, func() bool {
				p, err := n1.m.Partition(tp0)
				return err == nil && !p.IsLeader() && p.LogEndOffset() == 35 &&
					slices.Equal(n1.segmentBytes(t, tp0), n2.segmentBytes(t, tp0))
			}, "the old leader follows with its corrupt batch refetched")
			if got := n1.m.OfflineReplicas(); len(got) != 0 {
				t.Fatalf("offline replicas %v after the repair", got)
			}
		})
	}
}
