package metadata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/kbroker/kbroker/metadata/decisions"
)

// Benchmarks of every metadata path whose cost could grow with the size of
// the cluster, at 1,000, 10,000 and 100,000 partitions (RF=3). The cost
// per operation of a path that touches one topic should not grow with the
// image; the cost of a path over every partition should grow linearly
// (ns/op divided by the partitions roughly constant). docs/ARCHITECTURE.md
// ("Metadata at scale") has the figures and the command.
//
//	go test -run '^$' -bench 'Scale' -benchmem -benchtime 20x ./metadata/

// scaleSizes are the partitions of the images benchmarked.
var scaleSizes = []int{1_000, 10_000, 100_000}

// scaleShape is how the partitions of an image are spread over topics.
type scaleShape struct {
	name   string
	topics int // 0: partitions/perTopic
	per    int // partitions per topic; 0: partitions/topics
}

// manyTopics is 100 partitions per topic (1,000 topics at 100k), fewTopics
// 10 topics of a tenth of the partitions each.
// oneTopicPerPartition (100,000 topics at 100k) shows what stays
// O(topics) per topic record: the topic maps are copied whole.
var (
	manyTopics           = scaleShape{name: "many", per: 100}
	fewTopics            = scaleShape{name: "few", topics: 10}
	oneTopicPerPartition = scaleShape{name: "single", per: 1}
)

func (s scaleShape) split(partitions int) (topics, per int) {
	if s.per > 0 {
		return partitions / s.per, s.per
	}
	return s.topics, partitions / s.topics
}

// scaleTopicName and scaleTopicID name topic i of a fixture.
func scaleTopicName(i int) string { return fmt.Sprintf("topic-%06d", i) }

func scaleTopicID(i int) [16]byte {
	var id [16]byte
	id[0] = 1
	binary.BigEndian.PutUint32(id[12:], uint32(i)+1)
	return id
}

// scaleBrokerRecords registers brokers 1..n, unfenced.
func scaleBrokerRecords(tb testing.TB, n int) [][]byte {
	var out [][]byte
	for id := int32(1); id <= int32(n); id++ {
		out = append(out, mustEncode(tb, recRegisterBroker, &registerBrokerRecord{
			BrokerID:      id,
			IncarnationID: fmt.Sprintf("inc-%d", id),
			Endpoints:     []Endpoint{{Listener: "PLAINTEXT", Host: "h", Port: 9092 + id, SecurityProtocol: "PLAINTEXT"}},
		}))
	}
	return out
}

// scaleCreateRecord is the CreateTopic record of topic i with n partitions
// placed round-robin over brokers 1..brokers, as the controller plans it
// (with limits, so the FSM checks them).
func scaleCreateRecord(tb testing.TB, i, n, brokers int, name string) []byte {
	ids := make([]int32, brokers)
	for b := range ids {
		ids[b] = int32(b + 1)
	}
	rec := &createTopicRecord{
		Name:       name,
		TopicID:    scaleTopicID(i),
		Partitions: make([]partitionRecord, n),
		Limits:     &partitionLimits{MaxPartitions: 1 << 40, MaxBrokerPartitions: 1 << 40},
	}
	for p, replicas := range decisions.PlaceReplicas(ids, int32(n), 3, i) {
		rec.Partitions[p] = partitionRecord{Partition: int32(p), Replicas: replicas, ISR: slices.Clone(replicas), Leader: replicas[0]}
	}
	return mustEncode(tb, recCreateTopic, rec)
}

// scaleApply applies data from index on and fails on a rejected record.
func scaleApply(tb testing.TB, img *Image, index uint64, data [][]byte) *Image {
	for _, d := range data {
		var res any
		img, res = applyEntry(img, index, d)
		if err, ok := res.(error); ok {
			tb.Fatalf("record %d rejected: %v", index, err)
		}
		index++
	}
	return img
}

var (
	fixturesMu sync.Mutex
	fixtures   = map[string]*Image{}
)

// scaleImage returns (and caches: images are immutable) an image of
// brokers brokers and partitions partitions spread as shape.
func scaleImage(tb testing.TB, brokers, partitions int, shape scaleShape) *Image {
	key := fmt.Sprintf("%d/%d/%s", brokers, partitions, shape.name)
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	if img, ok := fixtures[key]; ok {
		return img
	}
	topics, per := shape.split(partitions)
	data := scaleBrokerRecords(tb, brokers)
	if shape.per == 1 {
		// Replaying 100,000 topic records copies the topic maps 100,000
		// times: build the topics directly.
		img := scaleApply(tb, emptyImage(), 1, data)
		ts := make([]*Topic, topics)
		for i := range ts {
			_, p, err := decodeRecord(scaleCreateRecord(tb, i, per, brokers, scaleTopicName(i)))
			if err != nil {
				tb.Fatal(err)
			}
			r := p.(*createTopicRecord)
			pr := r.Partitions[0]
			ts[i] = &Topic{Name: r.Name, ID: r.TopicID, Configs: map[string]string{},
				Partitions: []*Partition{{Replicas: pr.Replicas, ISR: pr.ISR, Leader: pr.Leader}}}
		}
		direct := NewImage(slices.Collect(maps.Values(img.Brokers)), ts)
		direct.Offset = img.Offset
		fixtures[key] = direct
		return direct
	}
	for i := range topics {
		data = append(data, scaleCreateRecord(tb, i, per, brokers, scaleTopicName(i)))
	}
	img := scaleApply(tb, emptyImage(), 1, data)
	fixtures[key] = img
	return img
}

// reportPerPartition adds the cost per partition of the image, the figure
// that stays constant when a path is linear.
func reportPerPartition(b *testing.B, partitions int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(partitions), "ns/partition")
}

// BenchmarkScaleCreateTopicOneRecord applies one CreateTopic record of all
// the partitions (to a fresh image with brokers only).
func BenchmarkScaleCreateTopicOneRecord(b *testing.B) {
	for _, n := range scaleSizes {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			base := scaleApply(b, emptyImage(), 1, scaleBrokerRecords(b, 3))
			rec := scaleCreateRecord(b, 0, n, 3, "big")
			startTimer(b)
			for range b.N {
				if _, res := applyEntry(base, 10, rec); res != nil {
					b.Fatal(res)
				}
			}
			reportPerPartition(b, n)
		})
	}
}

// BenchmarkScaleCreateTopicManyRecords builds the image from nothing, one
// CreateTopic record of 100 partitions at a time: the whole log replay,
// one record per raft batch (batch=1) or 64 (batch=64, as raft hands a
// replay to ApplyBatch).
func BenchmarkScaleCreateTopicManyRecords(b *testing.B) {
	for _, n := range scaleSizes {
		data := scaleBrokerRecords(b, 3)
		for i := range n / 100 {
			data = append(data, scaleCreateRecord(b, i, 100, 3, scaleTopicName(i)))
		}
		logs := make([]*raft.Log, len(data))
		for i, d := range data {
			logs[i] = &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: d}
		}
		for _, batch := range []int{1, 64} {
			b.Run(fmt.Sprintf("batch=%d/partitions=%d", batch, n), func(b *testing.B) {
				startTimer(b)
				for range b.N {
					img := emptyImage()
					for k := 0; k < len(logs); k += batch {
						var res []any
						img, res = applyBatch(img, logs[k:min(k+batch, len(logs))])
						for _, r := range res {
							if r != nil {
								b.Fatal(r)
							}
						}
					}
				}
				reportPerPartition(b, n)
			})
		}
	}
}

// BenchmarkScaleCreateTopicInto applies one more CreateTopic record of 100
// partitions to an image that has n: what one CreateTopics costs the FSM
// of a big cluster (constant when nothing scans the image).
func BenchmarkScaleCreateTopicInto(b *testing.B) {
	for _, n := range scaleSizes {
		for _, shape := range []scaleShape{manyTopics, fewTopics, oneTopicPerPartition} {
			b.Run(fmt.Sprintf("shape=%s/partitions=%d", shape.name, n), func(b *testing.B) {
				img := scaleImage(b, 3, n, shape)
				rec := scaleCreateRecord(b, 1<<20, 100, 3, "new.topic_x")
				startTimer(b)
				for range b.N {
					if _, res := applyEntry(img, img.Offset+1, rec); res != nil {
						b.Fatal(res)
					}
				}
			})
		}
	}
}

// BenchmarkScalePlaceTopic plans a new topic of 100 partitions against
// the image as the active controller does for CreateTopics: counting the
// partitions for the limits, checking the name, placing replicas.
func BenchmarkScalePlaceTopic(b *testing.B) {
	for _, brokers := range []int{3, 12} {
		for _, n := range scaleSizes {
			b.Run(fmt.Sprintf("brokers=%d/partitions=%d", brokers, n), func(b *testing.B) {
				img := scaleImage(b, brokers, n, manyTopics)
				lim := &partitionLimits{MaxPartitions: DefaultMaxPartitions * 10, MaxBrokerPartitions: DefaultMaxPartitions * 10}
				sp := TopicSpec{Name: "new.topic_x", NumPartitions: 100, ReplicationFactor: 3}
				startTimer(b)
				for i := range b.N {
					pl := planner{img: img, limits: lim, counts: countPartitions(img)}
					if _, err := pl.plan(sp, scaleTopicID(1<<20), i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkScaleFenceBroker applies the fencing of broker 1 (leader
// elections for every partition it led, ISR shrinks) and then the
// unfencing (elections of the partitions left offline): linear in the
// partitions.
func BenchmarkScaleFenceBroker(b *testing.B) {
	for _, brokers := range []int{3, 12} {
		for _, n := range scaleSizes {
			img := scaleImage(b, brokers, n, manyTopics)
			fence := mustEncode(b, recFenceBroker, &fenceBrokerRecord{BrokerID: 1, BrokerEpoch: img.Brokers[1].Epoch})
			b.Run(fmt.Sprintf("op=fence/brokers=%d/partitions=%d", brokers, n), func(b *testing.B) {
				startTimer(b)
				for range b.N {
					if _, res := applyEntry(img, img.Offset+1, fence); res != nil {
						b.Fatal(res)
					}
				}
				reportPerPartition(b, n)
			})
			fenced, _ := applyEntry(img, img.Offset+1, fence)
			unfence := mustEncode(b, recUnfenceBroker, &fenceBrokerRecord{BrokerID: 1, BrokerEpoch: img.Brokers[1].Epoch})
			b.Run(fmt.Sprintf("op=unfence/brokers=%d/partitions=%d", brokers, n), func(b *testing.B) {
				startTimer(b)
				for range b.N {
					if _, res := applyEntry(fenced, fenced.Offset+1, unfence); res != nil {
						b.Fatal(res)
					}
				}
				reportPerPartition(b, n)
			})
		}
	}
}

// BenchmarkScaleISRChange applies one AlterPartition (an ISR shrink) of
// one partition: what every ISR change costs the FSM.
func BenchmarkScaleISRChange(b *testing.B) {
	for _, n := range scaleSizes {
		for _, shape := range []scaleShape{manyTopics, fewTopics, oneTopicPerPartition} {
			b.Run(fmt.Sprintf("shape=%s/partitions=%d", shape.name, n), func(b *testing.B) {
				img := scaleImage(b, 3, n, shape)
				p := img.TopicsByID[scaleTopicID(0)].Partitions[0]
				rec := mustEncode(b, recPartitionChange, &partitionChangeRecord{
					TopicID: scaleTopicID(0), Partition: 0, Leader: p.Leader, ISR: []int32{p.Leader},
					LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
				})
				startTimer(b)
				for range b.N {
					if _, res := applyEntry(img, img.Offset+1, rec); res != nil {
						b.Fatal(res)
					}
				}
			})
		}
	}
}

// BenchmarkScaleSnapshot writes the image as a raft snapshot, and
// restores it.
func BenchmarkScaleSnapshot(b *testing.B) {
	for _, n := range scaleSizes {
		img := scaleImage(b, 3, n, manyTopics)
		var buf bytes.Buffer
		if err := writeSnapshot(&buf, img); err != nil {
			b.Fatal(err)
		}
		data := buf.Bytes()
		b.Run(fmt.Sprintf("op=write/partitions=%d", n), func(b *testing.B) {
			startTimer(b)
			var w bytes.Buffer
			for range b.N {
				w.Reset()
				if err := writeSnapshot(&w, img); err != nil {
					b.Fatal(err)
				}
			}
			reportPerPartition(b, n)
		})
		b.Run(fmt.Sprintf("op=restore/partitions=%d", n), func(b *testing.B) {
			startTimer(b)
			for range b.N {
				if _, err := readSnapshot(bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
			reportPerPartition(b, n)
		})
	}
}

// BenchmarkScaleTopicNames lists the topic names in order, as every
// request for all topics does.
func BenchmarkScaleTopicNames(b *testing.B) {
	for _, n := range scaleSizes {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			img := scaleImage(b, 3, n, manyTopics)
			startTimer(b)
			for range b.N {
				if len(img.TopicNames()) != n/100 {
					b.Fatal("topics missing")
				}
			}
		})
	}
}

// BenchmarkScaleISRChangeBatch applies 64 ISR shrinks of different
// partitions one by one (batch=1, as Apply) and as one raft batch
// (batch=64, as ApplyBatch, which copies the topic maps once): ns/op is
// per record. The single shape (one partition per topic) is where the
// copy of the topic maps dominates, the few shape (64 partitions of one
// topic of n/10) where the copy of the topic's partition slice does.
func BenchmarkScaleISRChangeBatch(b *testing.B) {
	for _, n := range scaleSizes {
		for _, shape := range []scaleShape{manyTopics, fewTopics, oneTopicPerPartition} {
			img := scaleImage(b, 3, n, shape)
			var logs []*raft.Log
			for _, name := range img.SortedTopicNames() {
				for _, p := range img.Topics[name].Partitions {
					if len(logs) == 64 {
						break
					}
					logs = append(logs, &raft.Log{
						Index: img.Offset + uint64(len(logs)) + 1, Type: raft.LogCommand,
						Data: mustEncode(b, recPartitionChange, &partitionChangeRecord{
							TopicID: img.Topics[name].ID, Partition: p.ID, Leader: p.Leader, ISR: []int32{p.Leader},
							LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
						}),
					})
				}
			}
			for _, batch := range []int{1, len(logs)} {
				b.Run(fmt.Sprintf("shape=%s/batch=%d/partitions=%d", shape.name, batch, n), func(b *testing.B) {
					startTimer(b)
					for range b.N {
						cur := img
						for k := 0; k < len(logs); k += batch {
							var res []any
							cur, res = applyBatch(cur, logs[k:k+batch])
							if res[0] != nil {
								b.Fatal(res[0])
							}
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(logs)), "ns/record")
				})
			}
		}
	}
}

// startTimer measures from here, after a collection: an operation must not
// pay for collecting the garbage of building its fixture (mark assists
// while a 100k-partition image is still being marked).
func startTimer(b *testing.B) {
	b.ReportAllocs()
	runtime.GC()
	b.ResetTimer()
}
