package groupcoord

// Consumer lag of the groups this broker coordinates, for metrics.
//
// Kafka's broker exports no lag: kafka-consumer-groups.sh and the lag
// exporters compute LAG = LOG-END-OFFSET − CURRENT-OFFSET, with the end
// offset from ListOffsets latest (read_uncommitted: the high watermark).
// The committed offsets live here, on the group's coordinator; the high
// watermark on the partition's replicas. The coordinator computes lag
// only from what this broker knows without asking anyone: the high
// watermark of the partitions it hosts, as leader or as follower (a
// follower's trails the leader's by at most one fetch). The committed
// partitions it hosts no replica of are counted, not guessed at. Each
// group has one coordinator, so summed over brokers every group counts
// once.

import (
	"cmp"
	"slices"
	"strings"

	"github.com/kbroker/kbroker/metadata"
)

// HighWatermarkFunc returns the high watermark of a partition this
// broker hosts a replica of, and false for any other.
type HighWatermarkFunc func(topic string, partition int32) (hw int64, ok bool)

// PartitionLag is the lag of one partition a group committed an offset
// for.
type PartitionLag struct {
	Group         string
	Topic         string
	Partition     int32
	Committed     int64
	HighWatermark int64
	// Lag is HighWatermark − Committed, 0 when the commit is past the
	// high watermark (a follower's stale high watermark, a truncated
	// log), as kadm's CalculateGroupLag rounds.
	Lag int64
}

// GroupLag is one group's total.
type GroupLag struct {
	Group string
	// Lag sums the Lag of the group's partitions with a known high
	// watermark.
	Lag int64
	// Unknown counts the committed partitions of existing topics this
	// broker hosts no replica of: they are in no PartitionLag.
	Unknown int
}

// LagReport is the lag of every group this broker coordinates.
type LagReport struct {
	Partitions []PartitionLag // by group, topic, partition
	Groups     []GroupLag     // by group; only groups with committed offsets
}

// committedOffset is a snapshot entry, copied under the lock.
type committedOffset struct {
	group     string
	topic     string
	partition int32
	offset    int64
}

// Lag computes the consumer lag of the groups this broker coordinates.
// The committed offsets are copied under the lock; the high watermarks
// and the image are read after it is released, so a scrape holds the
// lock only for the copy. Offsets of topics or partitions that no longer
// exist, and commits of offset −1 (nothing consumed: Kafka's tools show
// no lag for them), are left out.
func (c *Coordinator) Lag(hw HighWatermarkFunc) LagReport {
	c.mu.Lock()
	n := 0
	for _, g := range c.mu.groups {
		n += len(g.Offsets)
	}
	snap := make([]committedOffset, 0, n)
	for id, g := range c.mu.groups {
		for tp, o := range g.Offsets {
			snap = append(snap, committedOffset{id, tp.Topic, tp.Partition, o.Offset})
		}
	}
	c.mu.Unlock()

	slices.SortFunc(snap, func(a, b committedOffset) int {
		return cmp.Or(strings.Compare(a.group, b.group), strings.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	var topics map[string]*metadata.Topic
	if img := c.host.Image(); img != nil {
		topics = img.Topics
	}
	var out LagReport
	for _, s := range snap {
		if len(out.Groups) == 0 || out.Groups[len(out.Groups)-1].Group != s.group {
			out.Groups = append(out.Groups, GroupLag{Group: s.group})
		}
		gl := &out.Groups[len(out.Groups)-1]
		if s.offset < 0 {
			continue
		}
		h, ok := hw(s.topic, s.partition)
		if !ok {
			if t := topics[s.topic]; t != nil && int(s.partition) < len(t.Partitions) {
				gl.Unknown++
			}
			continue
		}
		lag := max(h-s.offset, 0)
		out.Partitions = append(out.Partitions, PartitionLag{
			Group: s.group, Topic: s.topic, Partition: s.partition,
			Committed: s.offset, HighWatermark: h, Lag: lag,
		})
		gl.Lag += lag
	}
	return out
}
