package metadata

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
)

// Growth tests: what an operation allocates on an image of 1,000
// partitions and on one of 10,000, compared. No clock: allocations are
// counted, so a loaded machine cannot fail them. An operation on one topic
// must allocate the same on both; one over every partition ten times as
// much. The bounds leave room for noise (another test's goroutine
// allocating meanwhile), not for a factor of ten more: a quadratic path
// allocates a hundred times as much.

// allocsAndBytes returns what one run of f allocates, on average over
// runs: allocations and bytes.
func allocsAndBytes(runs int, f func()) (allocs, bytes float64) {
	f() // warm up: lazily built state is not the operation's
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(runs), float64(after.TotalAlloc-before.TotalAlloc) / float64(runs)
}

// checkGrowth runs op(size) at 1k and 10k partitions and fails if its
// allocations (count or bytes) grow by more than maxRatio.
func checkGrowth(t *testing.T, name string, maxRatio float64, op func(size int) func()) {
	t.Helper()
	checkGrowthOf(t, name, maxRatio, true, op)
}

// checkGrowthOf is checkGrowth, of the allocation count only unless
// withBytes.
func checkGrowthOf(t *testing.T, name string, maxRatio float64, withBytes bool, op func(size int) func()) {
	t.Helper()
	a1, b1 := allocsAndBytes(5, op(1_000))
	a10, b10 := allocsAndBytes(5, op(10_000))
	t.Logf("%s: %.0f allocs, %.0f B at 1k partitions; %.0f allocs, %.0f B at 10k", name, a1, b1, a10, b10)
	if a10 > maxRatio*max(a1, 1) {
		t.Errorf("%s: %.0f allocations at 10k partitions, %.0f at 1k: more than %.0fx", name, a10, a1, maxRatio)
	}
	if withBytes && b10 > maxRatio*max(b1, 1) {
		t.Errorf("%s: %.0f bytes at 10k partitions, %.0f at 1k: more than %.0fx", name, b10, b1, maxRatio)
	}
}

// Per-topic operations allocate what the topic needs: the same at 1k and
// 10k partitions (10 topics of 100 and 1,000 partitions: the one touched
// grows, so topic-sized operations are measured on the many-topics
// shape, whose topics keep 100 partitions).
const (
	perTopicRatio = 3  // constant, with room for noise
	linearRatio   = 25 // 10x, with room for noise; quadratic is 100x
)

func TestScaleGrowthPerTopicRecords(t *testing.T) {
	// The few-topics shape: the image grows, the number of topics (whose
	// maps each topic record copies) does not.
	checkGrowth(t, "CreateTopic into the image", perTopicRatio, func(size int) func() {
		img := scaleImage(t, 3, size, fewTopics)
		rec := scaleCreateRecord(t, 1<<20, 100, 3, "new.topic_x")
		return func() {
			if _, res := applyEntry(img, img.Offset+1, rec); res != nil {
				t.Fatal(res)
			}
		}
	})
	checkGrowth(t, "CreateTopics planned", perTopicRatio, func(size int) func() {
		img := scaleImage(t, 12, size, manyTopics)
		sp := TopicSpec{Name: "new.topic_x", NumPartitions: 100, ReplicationFactor: 3}
		return func() {
			pl := planner{img: img, limits: &partitionLimits{MaxPartitions: 1 << 40}, counts: countPartitions(img)}
			if _, err := pl.plan(sp, scaleTopicID(1<<20), 1); err != nil {
				t.Fatal(err)
			}
		}
	})
	// The bytes of an ISR change grow with the topic maps, copied whole
	// for every topic record (O(topics), Image.withTopic), or with the
	// topic's partition slice: only the count of allocations is constant.
	checkGrowthOf(t, "ISR change", perTopicRatio, false, func(size int) func() {
		img := scaleImage(t, 3, size, manyTopics)
		p := img.TopicsByID[scaleTopicID(0)].Partitions[0]
		rec := mustEncode(t, recPartitionChange, &partitionChangeRecord{
			TopicID: scaleTopicID(0), Leader: p.Leader, ISR: []int32{p.Leader},
			LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
		})
		return func() {
			if _, res := applyEntry(img, img.Offset+1, rec); res != nil {
				t.Fatal(res)
			}
		}
	})
}

func TestScaleGrowthWholeImage(t *testing.T) {
	checkGrowth(t, "replay of CreateTopic records", linearRatio, func(size int) func() {
		data := scaleBrokerRecords(t, 3)
		for i := range size / 100 {
			data = append(data, scaleCreateRecord(t, i, 100, 3, scaleTopicName(i)))
		}
		return func() { scaleApply(t, emptyImage(), 1, data) }
	})
	checkGrowth(t, "fence", linearRatio, func(size int) func() {
		img := scaleImage(t, 3, size, manyTopics)
		rec := mustEncode(t, recFenceBroker, &fenceBrokerRecord{BrokerID: 1, BrokerEpoch: img.Brokers[1].Epoch})
		return func() { applyEntry(img, img.Offset+1, rec) }
	})
	checkGrowth(t, "snapshot and restore", linearRatio, func(size int) func() {
		img := scaleImage(t, 3, size, manyTopics)
		return func() {
			if _, err := readSnapshot(bytes.NewReader(snapshotBytes(t, img))); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestTopicRecordsUseTheCounts: the partition limits of a CreateTopic
// record and of the controller's plan are checked against the image's
// counts, not a pass over every partition (which allocates nothing, so
// the growth tests cannot see it): with the counts claiming the cluster
// full, a topic is refused though the topics hold only 1,000 partitions.
func TestTopicRecordsUseTheCounts(t *testing.T) {
	img := scaleImage(t, 3, 1_000, manyTopics)
	if c := countPartitions(img); c.total != 1_000 || c.perBroker[1] != 1_000 {
		t.Fatalf("counts of the fixture: %d, %v", c.total, c.perBroker)
	}
	full := img.next(img.Offset)
	full.replicas = &replicaCounts{total: 1 << 40, perBroker: img.replicas.perBroker}
	_, res := applyEntry(full, full.Offset+1, scaleCreateRecord(t, 1<<20, 1, 3, "one.more"))
	if err, _ := res.(error); !errors.Is(err, ErrPartitionLimit) {
		t.Fatalf("CreateTopic with the counts at the limit: %v", res)
	}
	pl := planner{img: full, limits: &partitionLimits{MaxPartitions: 1 << 40}, counts: countPartitions(full)}
	if _, err := pl.plan(TopicSpec{Name: "one.more", NumPartitions: 1, ReplicationFactor: 3}, scaleTopicID(1<<20), 0); !errors.Is(err, ErrPartitionLimit) {
		t.Fatalf("plan with the counts at the limit: %v", err)
	}
}
