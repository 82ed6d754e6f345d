package metadata

// Remote log segment metadata (KIP-405): which segments of a partition
// have been copied to the remote store, and in which state. Kafka keeps it
// in the __remote_log_metadata topic; kbroker keeps it in the metadata
// log (docs/ARCHITECTURE.md says why), as RemoteSegment records that move
// one segment through Kafka's RemoteLogSegmentState:
//
//	COPY_SEGMENT_STARTED -> COPY_SEGMENT_FINISHED -> DELETE_SEGMENT_STARTED -> DELETE_SEGMENT_FINISHED (gone)
//	COPY_SEGMENT_STARTED ---------------------------^
//
// The leader writes COPY_SEGMENT_STARTED before its first byte reaches the
// store, so a leader that dies mid-upload leaves a record the next leader
// finds and cleans up (delete the objects, then DELETE_SEGMENT_FINISHED).
// Every transition carries the writer's leader epoch, which must be the
// partition's current one: a deposed leader can neither finish nor delete.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/kbroker/kbroker/metadata/features"
)

// RemoteSegmentState is Kafka's RemoteLogSegmentState.
type RemoteSegmentState int8

// The states, with Kafka's ids.
const (
	RemoteCopyStarted    RemoteSegmentState = 0 // COPY_SEGMENT_STARTED
	RemoteCopyFinished   RemoteSegmentState = 1 // COPY_SEGMENT_FINISHED
	RemoteDeleteStarted  RemoteSegmentState = 2 // DELETE_SEGMENT_STARTED
	RemoteDeleteFinished RemoteSegmentState = 3 // DELETE_SEGMENT_FINISHED
)

func (s RemoteSegmentState) String() string {
	switch s {
	case RemoteCopyStarted:
		return "COPY_SEGMENT_STARTED"
	case RemoteCopyFinished:
		return "COPY_SEGMENT_FINISHED"
	case RemoteDeleteStarted:
		return "DELETE_SEGMENT_STARTED"
	case RemoteDeleteFinished:
		return "DELETE_SEGMENT_FINISHED"
	}
	return fmt.Sprintf("RemoteSegmentState(%d)", int8(s))
}

// RemoteSegment is one remote copy of a segment of a partition.
type RemoteSegment struct {
	ID           [16]byte           `json:"id"`
	BaseOffset   int64              `json:"baseOffset"`
	EndOffset    int64              `json:"endOffset"` // inclusive
	MaxTimestamp int64              `json:"maxTimestamp"`
	Size         int64              `json:"size"` // bytes of the .log
	LeaderEpoch  int32              `json:"leaderEpoch"`
	Broker       int32              `json:"broker"`
	State        RemoteSegmentState `json:"state"`
}

// RemotePartition names a partition by topic id, for the remote segments.
type RemotePartition struct {
	TopicID   [16]byte `json:"topicId"`
	Partition int32    `json:"partition"`
}

// ErrInvalidRemoteSegmentState: a RemoteSegment record whose transition
// the segment's current state does not allow.
var ErrInvalidRemoteSegmentState = errors.New("metadata: invalid remote segment state transition")

// RemoteSegments returns the remote segments of a partition, ordered by
// base offset then id. The slice and its segments are the image's: read
// only.
func (i *Image) RemoteSegments(topicID [16]byte, partition int32) []*RemoteSegment {
	return i.remote[RemotePartition{topicID, partition}]
}

// remoteSegmentRecord moves one segment to Segment.State (recRemoteSegment).
type remoteSegmentRecord struct {
	RemotePartition
	Segment RemoteSegment `json:"segment"`
}

func applyRemoteSegment(img *Image, r *remoteSegmentRecord) error {
	if mv := img.Features()[features.MetadataVersion]; mv < features.MetadataVersionRemoteLogMetadata {
		return fmt.Errorf("%w: RemoteSegment at metadata.version %d", ErrUnsupportedRecord, mv)
	}
	t, ok := img.TopicsByID[r.TopicID]
	if !ok || r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
		return fmt.Errorf("%w: remote segment of partition %d of topic id %x", ErrUnknownTopic, r.Partition, r.TopicID)
	}
	p := t.Partitions[r.Partition]
	seg := r.Segment
	if seg.LeaderEpoch != p.LeaderEpoch || seg.Broker != p.Leader {
		return fmt.Errorf("%w: remote segment of %s-%d by broker %d at leader epoch %d; leader %d at %d",
			ErrFencedLeaderEpoch, t.Name, r.Partition, seg.Broker, seg.LeaderEpoch, p.Leader, p.LeaderEpoch)
	}
	key := r.RemotePartition
	segs := img.remote[key]
	i := slices.IndexFunc(segs, func(s *RemoteSegment) bool { return s.ID == seg.ID })
	var cur *RemoteSegment
	if i >= 0 {
		cur = segs[i]
	}
	if err := remoteTransition(cur, seg.State); err != nil {
		return fmt.Errorf("%w: segment %x of %s-%d", err, seg.ID, t.Name, r.Partition)
	}
	if cur != nil && cur.State == seg.State {
		return nil // a repeated request (call retries): already applied
	}
	next := slices.Clone(segs)
	switch {
	case seg.State == RemoteDeleteFinished:
		next = slices.Delete(next, i, i+1)
	case cur == nil:
		if seg.EndOffset < seg.BaseOffset || seg.BaseOffset < 0 || seg.Size < 0 {
			return fmt.Errorf("%w: segment %x of %s-%d has offsets %d-%d, size %d", ErrInvalidRemoteSegmentState,
				seg.ID, t.Name, r.Partition, seg.BaseOffset, seg.EndOffset, seg.Size)
		}
		s := seg
		next = append(next, &s)
		slices.SortFunc(next, func(a, b *RemoteSegment) int {
			return cmp.Or(cmp.Compare(a.BaseOffset, b.BaseOffset), slices.Compare(a.ID[:], b.ID[:]))
		})
	default:
		// Only the state and who moved it change; the offsets are the
		// ones COPY_SEGMENT_STARTED recorded.
		s := *cur
		s.State, s.LeaderEpoch, s.Broker = seg.State, seg.LeaderEpoch, seg.Broker
		next[i] = &s
	}
	img.remote = maps.Clone(img.remote)
	if img.remote == nil {
		img.remote = map[RemotePartition][]*RemoteSegment{}
	}
	if len(next) == 0 {
		delete(img.remote, key)
	} else {
		img.remote[key] = next
	}
	return nil
}

// remoteTransition checks a move of a segment in state cur (nil: none) to
// state to. Moving to the state it is in is allowed (a repeat).
func remoteTransition(cur *RemoteSegment, to RemoteSegmentState) error {
	if cur == nil {
		if to == RemoteCopyStarted {
			return nil
		}
		return fmt.Errorf("%w: unknown segment to %v", ErrInvalidRemoteSegmentState, to)
	}
	from := cur.State
	ok := from == to ||
		from == RemoteCopyStarted && (to == RemoteCopyFinished || to == RemoteDeleteStarted) ||
		from == RemoteCopyFinished && to == RemoteDeleteStarted ||
		from == RemoteDeleteStarted && to == RemoteDeleteFinished
	if !ok {
		return fmt.Errorf("%w: %v to %v", ErrInvalidRemoteSegmentState, from, to)
	}
	return nil
}

// withoutRemoteTopic drops the remote segments of a deleted topic from the
// image. Their objects stay in the store: see the orphan sweep in package
// tiered.
func (i *Image) withoutRemoteTopic(id [16]byte) {
	var drop []RemotePartition
	for k := range i.remote {
		if k.TopicID == id {
			drop = append(drop, k)
		}
	}
	if len(drop) == 0 {
		return
	}
	i.remote = maps.Clone(i.remote)
	for _, k := range drop {
		delete(i.remote, k)
	}
}

// PutRemoteSegment proposes a RemoteSegment record (forwarded to the
// active controller): segment seg of the partition moves to seg.State.
// seg.Broker must lead the partition at seg.LeaderEpoch
// (ErrFencedLeaderEpoch); a transition the current state does not allow
// is ErrInvalidRemoteSegmentState; below metadata.version 5 it is
// ErrUnsupportedRecord.
func (s *Store) PutRemoteSegment(ctx context.Context, p RemotePartition, seg RemoteSegment) error {
	_, err := call(ctx, s, opRemoteSegment, remoteSegmentRecord{RemotePartition: p, Segment: seg})
	return err
}

// opRemoteSegment acts for the broker that moves the segment: only the
// partition's leader may, which apply checks.
var opRemoteSegment = defineOp("RemoteSegment",
	func(_ *Image, r remoteSegmentRecord) int32 { return r.Segment.Broker },
	func(s *Store, ctx context.Context, r remoteSegmentRecord) (none, error) {
		if mv := s.Image().Features()[features.MetadataVersion]; mv < features.MetadataVersionRemoteLogMetadata {
			return none{}, fmt.Errorf("%w: remote log metadata needs metadata.version %d, the cluster is at %d",
				ErrUnsupportedRecord, features.MetadataVersionRemoteLogMetadata, mv)
		}
		_, err := s.propose(ctx, recRemoteSegment, &r)
		return none{}, err
	})

// sortedRemote is the image's remote segments in snapshot order.
func sortedRemote(img *Image) []remotePartitionSegments {
	keys := slices.SortedFunc(maps.Keys(img.remote), func(a, b RemotePartition) int {
		return cmp.Or(slices.Compare(a.TopicID[:], b.TopicID[:]), cmp.Compare(a.Partition, b.Partition))
	})
	out := make([]remotePartitionSegments, len(keys))
	for i, k := range keys {
		out[i] = remotePartitionSegments{RemotePartition: k, Segments: img.remote[k]}
	}
	return out
}

// remotePartitionSegments is one partition's remote segments in a
// snapshot.
type remotePartitionSegments struct {
	RemotePartition
	Segments []*RemoteSegment `json:"segments"`
}
