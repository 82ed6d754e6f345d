package cluster

// The group coordinator: glue between the pure state machine of package
// group and this broker's partitions of __consumer_offsets.
//
// A group lives on partition abs(javaHashCode(group.id)) % partitions of
// __consumer_offsets, and the leader of that partition is its
// coordinator. When this broker becomes leader of such a partition
// (OnRoleChange), the coordinator reads the partition from its log start
// to its log end (as Kafka's GroupMetadataManager does), keeps the latest
// value per key (a null value deletes), rebuilds the groups and their
// offsets, and answers COORDINATOR_LOAD_IN_PROGRESS meanwhile. When it
// stops leading, it drops those groups (waiting joins and syncs get
// NOT_COORDINATOR) and answers NOT_COORDINATOR from then on.
//
// Writes (offset commits, the leader's assignment, tombstones) are one
// uncompressed batch appended with acks=all and acknowledged once the
// partition's high watermark passes it: a delayedStore in the groups
// purgatory, checked by the OnHighWatermark and OnRoleChange hooks, with
// offsets.commit.timeout.ms (Kafka's default, 5s) as its deadline.
//
// The topic is created with cleanup.policy=compact (the storage cleaner
// keeps the latest record per key and drops old tombstones) and with
// retention.ms=-1 and retention.bytes=-1.
//
// Offsets of Empty groups expire after offsets.retention.minutes. The
// sweep runs every offsets.retention.check.interval.ms (Kafka's
// default, 10 minutes) and writes tombstones; an Empty group left without
// offsets is deleted (a group tombstone) by the same sweep.
//
// Lock order: groupCoordinator.mu, then whatever package group calls back
// (Respond on a request context, which never blocks). Nothing is appended
// to a log while mu is held: the completion of a write takes mu itself.
//
// Goroutines: run (the ticker and the loader dispatcher) and one loader
// per partition being loaded, all owned by run and stopped by its context.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/purgatory"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

const (
	offsetsTopic = "__consumer_offsets"
	// offsetsRetentionCheckInterval is offsets.retention.check.interval.ms'
	// default.
	offsetsRetentionCheckInterval = 10 * time.Minute
	// offsetCommitTimeout is offsets.commit.timeout.ms' default.
	offsetCommitTimeout = 5 * time.Second
	// groupTick is how often sessions and rebalance timeouts are checked.
	groupTick = 100 * time.Millisecond
	// offsetsLoadBufferSize is offsets.load.buffer.size' default.
	offsetsLoadBufferSize = 5 << 20
)

// javaStringHashCode is Java's String.hashCode: 31*h + c over the UTF-16
// code units.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, c := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(c)
	}
	return h
}

// groupPartition is Kafka's partitionFor: Utils.abs(hash) % n, where
// Utils.abs(x) = x & 0x7fffffff.
func groupPartition(groupID string, n int32) int32 {
	return (javaStringHashCode(groupID) & 0x7fffffff) % n
}

// offsetsPartition is the coordinator's view of one partition it leads.
type offsetsPartition struct {
	leaderEpoch int32
	loading     bool
	token       uint64
}

type groupCoordinator struct {
	n       *Node
	logger  *slog.Logger
	waiters *purgatory.Purgatory[replication.TopicPartition]
	kick    chan struct{}

	createMu sync.Mutex // one creation of __consumer_offsets at a time

	mu struct {
		sync.Mutex
		closed      bool
		nextToken   uint64
		parts       map[int32]*offsetsPartition
		groups      map[string]*group.Group
		roleChanged map[int32]bool
	}
}

func newGroupCoordinator(n *Node) *groupCoordinator {
	c := &groupCoordinator{
		n:       n,
		logger:  n.logger.With("component", "groups"),
		waiters: purgatory.New[replication.TopicPartition]("groups"),
		kick:    make(chan struct{}, 1),
	}
	c.mu.parts = map[int32]*offsetsPartition{}
	c.mu.groups = map[string]*group.Group{}
	c.mu.roleChanged = map[int32]bool{}
	return c
}

// onRoleChange is chained into the replica manager's OnRoleChange hook.
func (c *groupCoordinator) onRoleChange(tp replication.TopicPartition) {
	if tp.Topic != offsetsTopic {
		return
	}
	c.waiters.Check(tp)
	c.mu.Lock()
	c.mu.roleChanged[tp.Partition] = true
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// onHighWatermark is chained into the OnHighWatermark hook.
func (c *groupCoordinator) onHighWatermark(tp replication.TopicPartition) {
	if tp.Topic == offsetsTopic {
		c.waiters.Check(tp)
	}
}

// run ticks the groups, loads partitions it became leader of, and sweeps
// expired offsets, until ctx ends.
func (c *groupCoordinator) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(groupTick)
	defer tick.Stop()
	sweep := time.NewTicker(offsetsRetentionCheckInterval)
	defer sweep.Stop()
	c.handleRoleChanges(ctx, &wg)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
			c.handleRoleChanges(ctx, &wg)
		case now := <-tick.C:
			c.tick(now)
		case now := <-sweep.C:
			c.expireOffsets(now)
		}
	}
}

// close fails every waiting group request with NOT_COORDINATOR and
// refuses new ones.
func (c *groupCoordinator) close() {
	c.mu.Lock()
	c.mu.closed = true
	for id, g := range c.mu.groups {
		g.Drop(kerr.NotCoordinator)
		delete(c.mu.groups, id)
	}
	clear(c.mu.parts)
	c.mu.Unlock()
	c.waiters.Close()
}

func (c *groupCoordinator) numPartitions() int32 {
	if t, ok := c.n.store.Image().Topics[offsetsTopic]; ok && len(t.Partitions) > 0 {
		return int32(len(t.Partitions))
	}
	return c.n.cfg.OffsetsTopicNumPartitions
}

func (c *groupCoordinator) partitionFor(groupID string) int32 {
	return groupPartition(groupID, c.numPartitions())
}

func (c *groupCoordinator) handleRoleChanges(ctx context.Context, wg *sync.WaitGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return
	}
	for p := range c.mu.roleChanged {
		delete(c.mu.roleChanged, p)
		tp := replication.TopicPartition{Topic: offsetsTopic, Partition: p}
		part, err := c.n.replicas.Partition(tp)
		leading := err == nil && part.IsLeader()
		cur, owned := c.mu.parts[p]
		if leading {
			epoch := part.State().LeaderEpoch
			if owned && cur.leaderEpoch == epoch {
				continue
			}
			if owned {
				c.dropLocked(p)
			}
			c.mu.nextToken++
			st := &offsetsPartition{leaderEpoch: epoch, loading: true, token: c.mu.nextToken}
			c.mu.parts[p] = st
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.load(ctx, p, part, st.token)
			}()
			continue
		}
		if owned {
			c.dropLocked(p)
		}
	}
}

// dropLocked forgets the groups of partition p.
func (c *groupCoordinator) dropLocked(p int32) {
	delete(c.mu.parts, p)
	n := c.numPartitions()
	for id, g := range c.mu.groups {
		if groupPartition(id, n) == p {
			g.Drop(kerr.NotCoordinator)
			delete(c.mu.groups, id)
		}
	}
	c.logger.Info("stopped coordinating", "partition", p)
}

// load reads partition p and installs its groups if p is still led under
// token when done.
func (c *groupCoordinator) load(ctx context.Context, p int32, part *replication.Partition, token uint64) {
	start := time.Now()
	offsets := map[string]map[group.TopicPartition]group.Offset{}
	metas := map[string]*kmsg.GroupMetadataValue{}
	off, end := part.LogStartOffset(), part.LogEndOffset()
	records := 0
	for off < end && ctx.Err() == nil {
		data, err := part.Log().Read(off, offsetsLoadBufferSize, end, true)
		if err != nil {
			if errors.Is(err, storage.ErrOffsetOutOfRange) && off < part.LogStartOffset() {
				off = part.LogStartOffset()
				continue
			}
			c.logger.Error("loading __consumer_offsets", "partition", p, "offset", off, "err", err)
			return
		}
		if len(data) == 0 {
			break
		}
		for len(data) > 0 {
			b, rest, err := record.Parse(data)
			if err != nil {
				break
			}
			data = rest
			off = b.LastOffset() + 1
			if b.IsControl() {
				continue
			}
			err = record.IterateCompacted(b, 64<<20, func(r *record.Record) error {
				key := append([]byte(nil), r.Key...)
				var value []byte
				if r.Value != nil {
					value = append([]byte{}, r.Value...)
				}
				e, err := group.Decode(key, value)
				if err != nil {
					c.logger.Debug("skipping __consumer_offsets record", "partition", p, "err", err)
					return nil
				}
				records++
				switch {
				case e.IsOffset && e.Tombstone:
					delete(offsets[e.Group], e.TP)
				case e.IsOffset:
					if offsets[e.Group] == nil {
						offsets[e.Group] = map[group.TopicPartition]group.Offset{}
					}
					offsets[e.Group][e.TP] = e.Offset
				case e.Tombstone:
					delete(metas, e.Group)
					// Kafka writes offset tombstones with a group's; a
					// group tombstone on its own leaves offsets alone.
				default:
					md := e.Metadata
					metas[e.Group] = &md
				}
				return nil
			})
			if err != nil {
				c.logger.Warn("skipping unreadable __consumer_offsets batch", "partition", p, "offset", b.BaseOffset(), "err", err)
			}
		}
	}
	now := time.Now()
	delay := time.Duration(c.n.cfg.GroupInitialRebalanceDelayMs) * time.Millisecond
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.mu.parts[p]
	if c.mu.closed || !ok || st.token != token || ctx.Err() != nil {
		return
	}
	ids := map[string]bool{}
	for id := range offsets {
		ids[id] = true
	}
	for id := range metas {
		ids[id] = true
	}
	for id := range ids {
		if len(offsets[id]) == 0 && metas[id] == nil {
			continue
		}
		c.mu.groups[id] = group.Restore(id, metas[id], offsets[id], delay, now)
	}
	st.loading = false
	c.logger.Info("loaded __consumer_offsets partition", "partition", p, "groups", len(ids), "records", records, "took", time.Since(start))
}

// groupLocked finds the group of id this broker coordinates. create makes
// an Empty one if it does not exist; otherwise a missing group is nil
// with a nil error.
func (c *groupCoordinator) groupLocked(id string, create bool) (*group.Group, error) {
	if c.mu.closed {
		return nil, kerr.NotCoordinator
	}
	st, ok := c.mu.parts[c.partitionFor(id)]
	switch {
	case !ok:
		return nil, kerr.NotCoordinator
	case st.loading:
		return nil, kerr.CoordinatorLoadInProgress
	}
	g, ok := c.mu.groups[id]
	if !ok && create {
		g = group.New(id, time.Duration(c.n.cfg.GroupInitialRebalanceDelayMs)*time.Millisecond, time.Now())
		c.mu.groups[id] = g
	}
	return g, nil
}

// tick runs every group's timers, and writes the metadata of the groups
// that changed outside a sync (became Empty, replaced a static member).
func (c *groupCoordinator) tick(now time.Time) {
	type write struct {
		p   int32
		rec record.Record
	}
	var writes []write
	c.mu.Lock()
	for id, g := range c.mu.groups {
		g.Tick(now)
		if g.TakeDirty() {
			writes = append(writes, write{c.partitionFor(id), record.Record{Key: group.GroupKey(id), Value: g.MetadataValue()}})
		}
	}
	c.mu.Unlock()
	for _, w := range writes {
		c.store(w.p, []record.Record{w.rec}, func(err error) {
			if err != nil {
				c.logger.Debug("storing empty group", "err", err)
			}
		})
	}
}

// expireOffsets is the offsets.retention.minutes sweep.
func (c *groupCoordinator) expireOffsets(now time.Time) {
	byPart := map[int32][]record.Record{}
	c.mu.Lock()
	for id, g := range c.mu.groups {
		if st, ok := c.mu.parts[c.partitionFor(id)]; !ok || st.loading {
			continue
		}
		p := c.partitionFor(id)
		for _, tp := range g.ExpireOffsets(c.offsetsRetention(), now) {
			byPart[p] = append(byPart[p], record.Record{Key: group.OffsetKey(id, tp)})
		}
		if g.State() == group.Empty && len(g.Offsets) == 0 && now.Sub(g.StateTimestamp()) >= c.offsetsRetention() {
			g.MarkDead(now)
			delete(c.mu.groups, id)
			byPart[p] = append(byPart[p], record.Record{Key: group.GroupKey(id)})
		}
	}
	c.mu.Unlock()
	for p, recs := range byPart {
		c.store(p, recs, func(err error) {
			if err != nil {
				c.logger.Warn("writing expired offsets tombstones", "partition", p, "err", err)
			}
		})
	}
}

// store appends recs to partition p with acks=all and calls done once the
// high watermark passed them, or with the Kafka error a group request
// gets: NOT_COORDINATOR when leadership moved, COORDINATOR_NOT_AVAILABLE
// when the ISR is too small or replication timed out. done may run on this
// goroutine; the caller must not hold c.mu.
func (c *groupCoordinator) store(p int32, recs []record.Record, done func(error)) {
	tp := replication.TopicPartition{Topic: offsetsTopic, Partition: p}
	part, err := c.n.replicas.LeaderPartition(tp)
	if err != nil {
		done(kerr.NotCoordinator)
		return
	}
	now := time.Now()
	for i := range recs {
		recs[i].OffsetDelta = int32(i)
	}
	batch, err := record.Build(record.BatchSpec{
		BaseTimestamp: now.UnixMilli(),
		ProducerID:    -1, ProducerEpoch: -1, BaseSequence: -1,
	}, recs)
	if err != nil {
		done(kerr.UnknownServerError)
		return
	}
	res, err := part.AppendAsLeader(batch, -1)
	if err != nil {
		done(storeError(err))
		return
	}
	op := &delayedStore{part: part, lastOffset: res.LastOffset, done: done}
	c.waiters.TryCompleteElseWatch(op, now.Add(offsetCommitTimeout), tp)
}

// storeError maps an append error as Kafka's GroupMetadataManager does.
func storeError(err error) error {
	switch {
	case errors.Is(err, replication.ErrNotLeader), errors.Is(err, storage.ErrStorage), errors.Is(err, storage.ErrClosed):
		return kerr.NotCoordinator
	case errors.Is(err, replication.ErrNotEnoughReplicas), errors.Is(err, replication.ErrUnknownTopicOrPartition):
		return kerr.CoordinatorNotAvailable
	case errors.Is(err, storage.ErrMessageTooLarge), errors.Is(err, record.ErrTooLarge):
		return kerr.InvalidCommitOffsetSize
	}
	return kerr.UnknownServerError
}

// delayedStore waits for the high watermark to pass a coordinator write.
type delayedStore struct {
	part       *replication.Partition
	lastOffset int64
	done       func(error)
}

func (d *delayedStore) TryComplete() bool {
	switch {
	case !d.part.IsLeader():
		d.done(kerr.NotCoordinator)
	case d.part.HighWatermark() > d.lastOffset:
		d.done(nil)
	default:
		return false
	}
	return true
}

func (d *delayedStore) OnExpire() { d.done(kerr.CoordinatorNotAvailable) }

// ensureOffsetsTopic creates __consumer_offsets if it does not exist.
func (c *groupCoordinator) ensureOffsetsTopic(ctx context.Context) error {
	if _, ok := c.n.store.Image().Topics[offsetsTopic]; ok {
		return nil
	}
	c.createMu.Lock()
	defer c.createMu.Unlock()
	img := c.n.store.Image()
	if _, ok := img.Topics[offsetsTopic]; ok {
		return nil
	}
	cfg := &c.n.cfg
	rf := cfg.OffsetsTopicReplicationFactor
	if live := int16(len(img.UnfencedBrokerIDs())); live < rf {
		rf = max(live, 1)
	}
	spec := metadata.TopicSpec{
		Name:              offsetsTopic,
		NumPartitions:     cfg.OffsetsTopicNumPartitions,
		ReplicationFactor: rf,
		Configs: map[string]string{
			"cleanup.policy":   "compact",
			"compression.type": "uncompressed",
			"retention.ms":     "-1",
			"retention.bytes":  "-1",
		},
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := c.n.store.CreateTopics(ctx, []metadata.TopicSpec{spec}, false)[0]
	if err != nil && !errors.Is(err, metadata.ErrTopicExists) {
		return fmt.Errorf("creating %s (%d partitions, replication factor %d): %w", offsetsTopic, spec.NumPartitions, rf, err)
	}
	if err := c.n.replicas.Apply(c.n.store.Image()); err != nil {
		c.logger.Warn("opening __consumer_offsets partitions", "err", err)
	}
	c.logger.Info("created "+offsetsTopic, "partitions", spec.NumPartitions, "replication.factor", rf)
	return nil
}

// coordinatorFor answers FindCoordinator for a group: the leader of its
// partition, creating the topic first if needed.
func (c *groupCoordinator) coordinatorFor(ctx context.Context, groupID, listener string) (int32, metadata.Endpoint, error) {
	if _, ok := c.n.store.Image().Topics[offsetsTopic]; !ok {
		if err := c.ensureOffsetsTopic(ctx); err != nil {
			c.logger.Warn("finding coordinator", "group", groupID, "err", err)
			return -1, metadata.Endpoint{}, kerr.CoordinatorNotAvailable
		}
	}
	img := c.n.store.Image()
	mp, ok := img.Partition(offsetsTopic, c.partitionFor(groupID))
	if !ok || mp.Leader == metadata.NoLeader {
		return -1, metadata.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	ep, ok := img.BrokerEndpoint(mp.Leader, listener)
	if !ok {
		return -1, metadata.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	return mp.Leader, ep, nil
}

// listGroupsLocked returns the groups this broker coordinates (loaded
// ones), by id.
func (c *groupCoordinator) listGroupsLocked() []*group.Group {
	out := make([]*group.Group, 0, len(c.mu.groups))
	for _, id := range slices.Sorted(maps.Keys(c.mu.groups)) {
		out = append(out, c.mu.groups[id])
	}
	return out
}

// clientHost is the member's host as Kafka reports it ("/1.2.3.4").
func clientHost(rc *RequestContext) string {
	if rc.Remote == nil {
		return ""
	}
	s := rc.Remote.String()
	if h, _, err := net.SplitHostPort(s); err == nil {
		return "/" + h
	}
	return "/" + s
}

// groupCounts returns how many loaded groups are in each state (metrics).
func (c *groupCoordinator) groupCounts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, g := range c.mu.groups {
		out[g.State().String()]++
	}
	return out
}

// offsetsRetention is offsets.retention.minutes.
func (c *groupCoordinator) offsetsRetention() time.Duration {
	return time.Duration(c.n.cfg.OffsetsRetentionMinutes) * time.Minute
}
