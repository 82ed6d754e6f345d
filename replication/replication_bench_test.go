package replication

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/wire/record"
)

// benchBatch is one uncompressed batch of records 100-byte values at
// offset 0 in leader epoch 0.
func benchBatch(b *testing.B, records int) record.Batch {
	b.Helper()
	recs := make([]record.Record, records)
	for i := range recs {
		recs[i] = record.Record{OffsetDelta: int32(i), Value: make([]byte, 100)}
	}
	batch, err := record.Build(record.BatchSpec{BaseTimestamp: time.Now().UnixMilli(), PartitionLeaderEpoch: 0,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

// BenchmarkFollowerAppend measures a follower writing one fetched batch
// of 10 records (the byte-for-byte append under the partition lock,
// after the role check).
func BenchmarkFollowerAppend(b *testing.B) {
	c := newTestCluster(b, 1, 2)
	c.images.elect(b, "orders", 0, []int32{1, 2}, 1, 1, 2)
	c.setDown(1, true) // no fetcher writes behind the benchmark's back
	n2 := c.start(2)
	c.waitApplied(b, n2)
	p := n2.partition(b, tp0)
	batch := benchBatch(b, 10)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		batch.SetBaseOffset(int64(i) * 10)
		if ok, err := p.followerAppend(1, 0, batch); !ok || err != nil {
			b.Fatalf("append %d: ok %v, %v", i, ok, err)
		}
	}
	b.StopTimer()
	if leo := p.LogEndOffset(); leo != int64(b.N)*10 {
		b.Fatalf("log end offset %d, want %d", leo, b.N*10)
	}
}

// BenchmarkReadFollowerFetch measures the leader answering a follower's
// fetch of one partition, 16 KiB per response from a log of 1000 batches:
// the checks, the read, recording the follower's position and the high
// watermark.
func BenchmarkReadFollowerFetch(b *testing.B) {
	c := newTestCluster(b, 1, 2)
	c.images.elect(b, "orders", 0, []int32{1, 2}, 1, 1, 2)
	n1 := c.start(1)
	c.waitApplied(b, n1)
	p := n1.partition(b, tp0)
	batch := benchBatch(b, 10)
	const batches = 1000
	for range batches {
		batch.SetBaseOffset(0) // the leader append numbered it in place
		if _, err := p.AppendAsLeader(batch, 1); err != nil {
			b.Fatal(err)
		}
	}
	leo := p.LogEndOffset()
	var bytes int
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		req := followerFetchRequest(12, 2, -1, tp0.Topic, int64(i*10)%leo, 0)
		req.Topics[0].Partitions[0].PartitionMaxBytes = 16 << 10
		resp, n, _ := n1.m.ReadFollowerFetch(req, FetchPeer{Broker: true}, time.Now())
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 || n == 0 {
			b.Fatalf("fetch %d: error %d, %d bytes", i, code, n)
		}
		bytes += n
	}
	b.StopTimer()
	b.SetBytes(int64(bytes / b.N))
}

// hwWaiter is an acks=all produce waiting for the high watermark. The
// benchmark parks it where cluster would park it in the produce
// purgatory; replication may not import purgatory (docs/ARCHITECTURE.md,
// "Allowed imports"), and the purgatory's own cost is measured by its
// benchmarks, so here the high watermark hook checks the one waiter
// itself.
type hwWaiter struct {
	p      *Partition
	target int64
	done   *atomic.Int64
}

// tryComplete reports whether the high watermark has reached the
// produce's last offset + 1, counting the completion once.
func (w *hwWaiter) tryComplete() bool {
	if w.p.HighWatermark() < w.target {
		return false
	}
	w.done.Add(1)
	return true
}

// BenchmarkHighWatermarkAdvance measures one acks=all round without the
// network: a leader append, the produce parked, the follower's fetch at
// the new log end offset advancing the high watermark, and the hook
// completing the parked produce.
func BenchmarkHighWatermarkAdvance(b *testing.B) {
	c := newTestCluster(b, 1, 2)
	c.images.elect(b, "orders", 0, []int32{1, 2}, 1, 1, 2)
	// parked is the produce waiting for the high watermark; the hook may
	// run on a fetcher's goroutine as well as on the benchmark's.
	var parked atomic.Pointer[hwWaiter]
	c.onHighWatermark = func(node int32, tp TopicPartition) {
		if node != 1 || tp != tp0 {
			return
		}
		if w := parked.Load(); w != nil && w.tryComplete() {
			parked.CompareAndSwap(w, nil)
		}
	}
	n1 := c.start(1)
	c.waitApplied(b, n1)
	p := n1.partition(b, tp0)
	batch := benchBatch(b, 10)
	var done atomic.Int64
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		batch.SetBaseOffset(0) // the leader append numbered it in place
		res, err := p.AppendAsLeader(batch, -1)
		if err != nil {
			b.Fatal(err)
		}
		w := &hwWaiter{p: p, target: res.LastOffset + 1, done: &done}
		if w.tryComplete() {
			b.Fatalf("produce %d completed before the follower fetched", i)
		}
		parked.Store(w)
		req := followerFetchRequest(12, 2, -1, tp0.Topic, res.LastOffset+1, 0)
		if resp, _, _ := n1.m.ReadFollowerFetch(req, FetchPeer{Broker: true}, time.Now()); resp.Topics[0].Partitions[0].ErrorCode != 0 {
			b.Fatalf("fetch %d: error %d", i, resp.Topics[0].Partitions[0].ErrorCode)
		}
		if parked.Load() != nil {
			b.Fatalf("produce %d still parked after the follower fetched its last offset", i)
		}
	}
	b.StopTimer()
	if got := done.Load(); got != int64(b.N) {
		b.Fatalf("%d of %d produces completed", got, b.N)
	}
}
