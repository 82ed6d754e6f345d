package kafkaapi

// What a parked Fetch knows of its partitions, so that waking it and
// expiring it cost offset comparisons instead of log reads.
//
// Kafka's DelayedFetch.tryComplete reads no log: it compares each
// partition's end offset (log end for a follower, high watermark or last
// stable offset for a consumer) with the fetch offset and completes when
// one moved, the leader changed or MinBytes are there. Here the first read
// of a fetch records, for each partition it found nothing in and no error
// for, the partition and its epochs. Until one of those, its log start or
// its end offset moves, a read of that partition would give the same
// empty answer with the offsets of the moment, so it is not read again:
// not on a wake (a change to another partition), not on expiry. An idle
// follower fetch of thousands of partitions therefore reads no log while
// parked, where it used to read every partition three or four times a
// round.
//
// A partition is quiet while all of these hold:
//   - its leader, leader epoch and partition epoch are those the first
//     read went by (taken before it read, so a change racing with the
//     read is seen as a change): leadership, the client's
//     CurrentLeaderEpoch, the replica set a follower must be in and the
//     KIP-320 divergence check all depend only on them, and a partition
//     this broker stops hosting is left with no leader;
//   - its log start offset is unchanged (retention or DeleteRecords could
//     put the fetch offset out of range);
//   - nothing can be read: for a follower the log end offset is the fetch
//     offset; for a consumer the high watermark, or with read_committed
//     the last stable offset, is at most the fetch offset;
//   - the fetcher is still allowed to read the topic, and a follower is
//     still a registered, unfenced broker at its epoch.
//
// Wakes are cheaper still: the fetch notes the purgatory's Check count
// before its first read and before each look, and a TryComplete that
// finds it unchanged returns at once. That is the common case at idle,
// where TryCompleteElseWatch tries twice while parking and nothing else
// wakes the fetch; only the expiry looks at every partition, once.
//
// A follower's position is recorded when its fetch arrives (the first
// read), as Kafka records it in fetchMessages and not when the delayed
// fetch completes; a quiet partition is therefore not recorded again.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
)

// partitionWatch is one partition of a parked fetch. part is nil for a
// partition that must always be read: its first read returned records, an
// error or a diverging epoch, or it was not hosted.
type partitionWatch struct {
	tp          replication.TopicPartition
	part        *replication.Partition
	epochs      replication.Epochs
	logStart    int64
	fetchOffset int64
}

// quietState is whether one partition is quiet now and, when it is, the
// offsets its answer carries, read in the same look as the check.
type quietState struct {
	ok            bool
	highWatermark int64
	lastStable    int64
}

// prepareWatches is called just before the fetch's first read. It names
// each partition and, for a consumer, records its handle, epochs and log
// start. A follower's are recorded by the read itself (observe), from
// what it checked before reading each partition.
func (f *delayedFetch) prepareWatches(img *metadata.Image) {
	n := 0
	for _, t := range f.req.Topics {
		n += len(t.Partitions)
	}
	f.watches = make([]partitionWatch, n)
	i := 0
	for _, t := range f.req.Topics {
		name, known := fetchTopicName(img, f.req.Version, &t)
		for _, p := range t.Partitions {
			w := &f.watches[i]
			i++
			w.tp = replication.TopicPartition{Topic: name, Partition: p.Partition}
			w.fetchOffset = p.FetchOffset
			if !known || f.follower {
				continue
			}
			part, err := f.node.replicas.Partition(w.tp)
			if err != nil {
				continue
			}
			w.part, w.epochs, w.logStart = part, part.Epochs(), part.LogStartOffset()
		}
	}
}

// observe records what the first read of a follower fetch went by for
// its i-th partition.
func (f *delayedFetch) observe(i int, s replication.FollowerReadSeen) {
	if i < len(f.watches) {
		w := &f.watches[i]
		w.part, w.epochs, w.logStart = s.Part, s.Epochs, s.LogStart
	}
}

// watchAfter drops from the watches the partitions whose first read,
// resp, is not the empty answer of a quiet partition. resp has one
// partition per partition of the request, in order, as both reads build
// it; if it did not, nothing is watched and every read is full.
func (f *delayedFetch) watchAfter(resp *kmsg.FetchResponse) {
	i := 0
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			if i >= len(f.watches) || rp.Partition != f.watches[i].tp.Partition {
				f.watches = nil
				return
			}
			if rp.ErrorCode != 0 || len(rp.RecordBatches) > 0 || rp.DivergingEpoch.Epoch >= 0 || rp.DivergingEpoch.EndOffset >= 0 {
				f.watches[i].part = nil
			}
			i++
		}
	}
	if i != len(f.watches) {
		f.watches = nil
	}
}

// allQuiet reports whether every partition of the fetch is quiet: then a
// read would return nothing new, and TryComplete need not read.
func (f *delayedFetch) allQuiet() bool {
	if len(f.watches) == 0 || !f.fetcherStillAllowed() {
		return false
	}
	allowed := map[string]bool{}
	for i := range f.watches {
		if _, ok := f.quiet(i, allowed); !ok {
			return false
		}
	}
	return true
}

// quietPartitions is each partition's quietState, nil when nothing is
// watched.
func (f *delayedFetch) quietPartitions() []quietState {
	if len(f.watches) == 0 || !f.fetcherStillAllowed() {
		return nil
	}
	out := make([]quietState, len(f.watches))
	allowed := map[string]bool{}
	for i := range f.watches {
		out[i], _ = f.quiet(i, allowed)
	}
	return out
}

// fetcherStillAllowed is the part of the quiet check that is the same for
// every partition: a follower must still be a broker the image vouches
// for (replication.Manager.CheckFollowerBroker).
func (f *delayedFetch) fetcherStillAllowed() bool {
	if !f.follower {
		return true
	}
	replica, epoch := replication.FetchReplica(f.req)
	return f.peer.Broker && f.node.replicas.CheckFollowerBroker(replica, epoch) == nil
}

// quiet checks partition i (see the file comment). allowed caches the
// authorization of each topic for one pass.
func (f *delayedFetch) quiet(i int, allowed map[string]bool) (quietState, bool) {
	w := &f.watches[i]
	if w.part == nil {
		return quietState{}, false
	}
	ok, seen := allowed[w.tp.Topic]
	if !seen {
		ok = f.allowed(w.tp.Topic)
		allowed[w.tp.Topic] = ok
	}
	if !ok {
		return quietState{}, false
	}
	// A partition removed from this broker (deleted, moved away, its
	// directory offline) is left with no leader, so its epochs differ
	// too; a topic created again is another Partition.
	cur := w.part
	if cur.Epochs() != w.epochs || cur.LogStartOffset() != w.logStart {
		return quietState{}, false
	}
	hw := cur.HighWatermark()
	s := quietState{highWatermark: hw, lastStable: hw}
	switch {
	case f.follower:
		s.ok = cur.LogEndOffset() == w.fetchOffset
	case f.req.IsolationLevel == 1:
		s.lastStable = cur.Log().LastStableOffset(hw)
		s.ok = s.lastStable <= w.fetchOffset
	default:
		s.ok = hw <= w.fetchOffset
	}
	return s, s.ok
}

// quietAnswer is the answer for quiet partition i: what a read would
// return, no records and the offsets seen by the check.
func (f *delayedFetch) quietAnswer(i int, s quietState) kmsg.FetchResponseTopicPartition {
	w := &f.watches[i]
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.Partition = w.tp.Partition
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = s.highWatermark, s.lastStable, w.logStart
	rp.PreferredReadReplica = -1
	rp.RecordBatches = []byte{}
	if !f.follower && f.req.IsolationLevel == 1 {
		// As readConsumerPartition: never null for read_committed.
		rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	}
	return rp
}

// readFollower reads a follower fetch, the partitions not quiet only
// (all when quiet is nil), and merges in the quiet ones' answers in the
// request's order.
func (f *delayedFetch) readFollower(quiet []quietState) (*kmsg.FetchResponse, int, bool) {
	now := time.Now()
	if quiet == nil {
		var observe func(int, replication.FollowerReadSeen)
		if !f.observed {
			f.observed = true
			observe = f.observe
		}
		return f.node.replicas.ReadFollowerFetchObserved(f.req, f.peer, now, &f.bufs, observe)
	}
	sub := *f.req
	sub.Topics = nil
	i := 0
	for _, t := range f.req.Topics {
		n := len(sub.Topics)
		for _, p := range t.Partitions {
			if !quiet[i].ok {
				if len(sub.Topics) == n {
					st := t
					st.Partitions = nil
					sub.Topics = append(sub.Topics, st)
				}
				sub.Topics[n].Partitions = append(sub.Topics[n].Partitions, p)
			}
			i++
		}
	}
	read := sub.ResponseKind().(*kmsg.FetchResponse)
	bytes, stop := 0, false
	if len(sub.Topics) > 0 {
		read, bytes, stop = f.node.replicas.ReadFollowerFetchPooled(&sub, f.peer, now, &f.bufs)
	}
	resp := f.req.ResponseKind().(*kmsg.FetchResponse)
	resp.Topics = make([]kmsg.FetchResponseTopic, 0, len(f.req.Topics))
	i = 0
	next := 0 // the next topic of read
	for _, t := range f.req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.TopicID = t.TopicID
		rt.Partitions = make([]kmsg.FetchResponseTopicPartition, 0, len(t.Partitions))
		var from *kmsg.FetchResponseTopic
		fromNext := 0
		for range t.Partitions {
			if quiet[i].ok {
				if rt.Topic == "" {
					rt.Topic = f.watches[i].tp.Topic
				}
				rt.Partitions = append(rt.Partitions, f.quietAnswer(i, quiet[i]))
			} else {
				if from == nil {
					from = &read.Topics[next]
					next++
					rt.Topic = from.Topic
				}
				rt.Partitions = append(rt.Partitions, from.Partitions[fromNext])
				fromNext++
			}
			i++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, bytes, stop
}
