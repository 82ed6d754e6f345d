package kafkaapi

import (
	"context"
	"slices"
	"time"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/replication"
)

// maxLeadershipWait bounds how long a Produce for a partition this broker
// does not lead waits for metadata already in its Raft log: well under a
// client's request timeout, far below franz-go's metadata min age (5s).
const maxLeadershipWait = time.Second

// awaitLeadership is called when a Produce finds this broker not leading
// tp. While this node's Raft log holds entries it has not applied yet (the
// election that makes it leader may be one of them, and a client may have
// learnt of it from a broker that applied it sooner), it waits up to
// maxLeadershipWait for them, applying each new image to the replicas at
// once, and returns the partition if this broker leads it then.
//
// It also waits while the image shows an election pending that may make
// this broker leader: the partition's leader is gone (none, fenced, or
// refusing this node's fetcher) and this broker is in its ISR. A client
// that learnt of the new leader from a broker the Raft log reached first
// then finds this one leading as soon as the entry arrives here.
//
// Answered NOT_LEADER_OR_FOLLOWER instead, a franz-go client that has just
// refreshed its metadata and been sent here waits its metadata min age
// before it asks again: after a kill of the controller's node, partitions
// stayed unwritable for ~5s after their new leader was elected.
func (h *Handlers) awaitLeadership(ctx context.Context, tp replication.TopicPartition) (*replication.Partition, bool) {
	if h.liveness.SessionLost() {
		return nil, false
	}
	var part *replication.Partition
	leads := func() bool {
		if err := h.replicas.Apply(h.store.Image()); err != nil {
			return false
		}
		p, err := h.replicas.Partition(tp)
		if err != nil || !p.IsLeader() {
			return false
		}
		part = p
		return true
	}
	electing := func() bool { return h.electionPending(h.store.Image(), tp, time.Now()) }
	if !awaitApplied(ctx, h.store, leads, electing) {
		return nil, false
	}
	return part, true
}

// electionPending reports whether img shows tp without a live leader while
// this broker is in its ISR, so that the controller may be electing it.
func (h *Handlers) electionPending(img *metadata.Image, tp replication.TopicPartition, now time.Time) bool {
	p, ok := img.Partition(tp.Topic, tp.Partition)
	if !ok || !slices.Contains(p.ISR, h.cfg.NodeID) || p.Leader == h.cfg.NodeID {
		return false
	}
	if p.Leader < 0 {
		return true
	}
	b, ok := img.Brokers[p.Leader]
	return !ok || b.Fenced || h.liveness.RefusingLeader(img, p.Leader, now)
}

// awaitImage returns the current image once has holds for it, waiting
// (bounded, see awaitApplied) only while this node has metadata entries
// it has not applied yet; otherwise the current image as it is.
func (h *Handlers) awaitImage(ctx context.Context, has func(*metadata.Image) bool) *metadata.Image {
	img := h.store.Image()
	if has(img) {
		return img
	}
	never := func() bool { return false }
	awaitApplied(ctx, h.store, func() bool {
		img = h.store.Image()
		return has(img)
	}, never)
	return img
}

// appliedSource is what awaitApplied needs of the metadata store.
type appliedSource interface {
	Unapplied() bool
	Changed() <-chan struct{}
}

// awaitApplied reports whether leads holds, checking it again as the
// store applies entries, for as long as the store has unapplied ones or
// electing holds, and at most maxLeadershipWait.
func awaitApplied(ctx context.Context, s appliedSource, leads, electing func() bool) bool {
	if !s.Unapplied() && !electing() {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, maxLeadershipWait)
	defer cancel()
	for {
		changed := s.Changed()
		if leads() {
			return true
		}
		if !s.Unapplied() && !electing() {
			return false
		}
		// Changed fires when an entry is applied; the tick catches the
		// last one, after which Unapplied turns false, and an election
		// whose entry has not reached this node yet.
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		t.Stop()
	}
}
