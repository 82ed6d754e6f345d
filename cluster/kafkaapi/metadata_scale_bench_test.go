package kafkaapi

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/metadata"
)

// Benchmarks of the requests answered from the metadata image at 1,000,
// 10,000 and 100,000 partitions (RF=3 over 3 brokers): Metadata for every
// topic and for one, DescribeTopicPartitions paged through every
// partition, ListPartitionReassignments. Describing every partition
// should cost the same per partition at every size; describing one topic
// should not depend on the other topics. docs/ARCHITECTURE.md ("Metadata
// at scale") has the figures.
//
//	go test -run '^$' -bench 'Scale' -benchmem -benchtime 20x ./cluster/

var scaleSizes = []int{1_000, 10_000, 100_000}

// scaleShape: topics of per partitions each (per 0: partitions/topics).
type scaleShape struct {
	name        string
	topics, per int
}

var (
	manyTopics = scaleShape{name: "many", per: 100}
	fewTopics  = scaleShape{name: "few", topics: 10}
)

func (s scaleShape) split(partitions int) (topics, per int) {
	if s.per > 0 {
		return partitions / s.per, s.per
	}
	return s.topics, partitions / s.topics
}

// scaleImage builds an image of 3 brokers and partitions partitions
// spread as shape, each placed round-robin; every tenth partition of every
// topic is being reassigned.
func scaleImage(partitions int, shape scaleShape) *metadata.Image {
	brokers := []*metadata.Broker{}
	for id := int32(1); id <= 3; id++ {
		brokers = append(brokers, &metadata.Broker{ID: id, Epoch: int64(id), Endpoints: []metadata.Endpoint{
			{Listener: "PLAINTEXT", Host: "h", Port: 9092 + id, SecurityProtocol: "PLAINTEXT"},
		}})
	}
	topics, per := shape.split(partitions)
	var ts []*metadata.Topic
	for i := range topics {
		t := &metadata.Topic{Name: fmt.Sprintf("topic-%06d", i), Configs: map[string]string{}}
		t.ID[0] = 1
		binary.BigEndian.PutUint32(t.ID[12:], uint32(i)+1)
		for p := range per {
			replicas := []int32{int32((i+p)%3 + 1), int32((i+p+1)%3 + 1), int32((i+p+2)%3 + 1)}
			part := &metadata.Partition{ID: int32(p), Replicas: replicas, ISR: replicas, Leader: replicas[0]}
			if p%10 == 0 {
				part.AddingReplicas = replicas[2:]
			}
			t.Partitions = append(t.Partitions, part)
		}
		ts = append(ts, t)
	}
	return metadata.NewImage(brokers, ts)
}

func scaleNode() *Handlers {
	return &Handlers{cfg: &config.Config{MaxRequestPartitionSizeLimit: 2000}, liveness: refusingBrokers{}}
}

func scaleRequestContext() *server.RequestContext {
	return server.NewRequestContext("PLAINTEXT", server.AllowAll{})
}

func reportPerPartition(b *testing.B, partitions int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(partitions), "ns/partition")
}

// BenchmarkScaleMetadataAllTopics builds a Metadata response for every
// topic.
func BenchmarkScaleMetadataAllTopics(b *testing.B) {
	n := scaleNode()
	for _, size := range scaleSizes {
		b.Run(fmt.Sprintf("partitions=%d", size), func(b *testing.B) {
			img := scaleImage(size, manyTopics)
			startTimer(b)
			for range b.N {
				if got := n.metadataTopics(scaleRequestContext(), img, nil, true, false); len(got) != len(img.Topics) {
					b.Fatalf("%d topics described, want %d", len(got), len(img.Topics))
				}
			}
			reportPerPartition(b, size)
		})
	}
}

// BenchmarkScaleMetadataOneTopic builds a Metadata response for one topic
// (by name and by id); its cost is that topic's partitions only.
func BenchmarkScaleMetadataOneTopic(b *testing.B) {
	n := scaleNode()
	for _, size := range scaleSizes {
		for _, shape := range []scaleShape{manyTopics, fewTopics} {
			b.Run(fmt.Sprintf("shape=%s/partitions=%d", shape.name, size), func(b *testing.B) {
				img := scaleImage(size, shape)
				name := "topic-000000"
				req := []kmsg.MetadataRequestTopic{{Topic: &name}, {TopicID: img.Topics[name].ID}}
				startTimer(b)
				for range b.N {
					got := n.metadataTopics(scaleRequestContext(), img, req, false, false)
					if len(got) != 2 || got[1].ErrorCode != 0 {
						b.Fatalf("got %+v", got)
					}
				}
			})
		}
	}
}

// BenchmarkScaleDescribeTopicPartitionsPaging pages through every
// partition with DescribeTopicPartitions (2,000 partitions a page): one
// op is the whole walk, so its cost per partition should not grow.
func BenchmarkScaleDescribeTopicPartitionsPaging(b *testing.B) {
	n := scaleNode()
	for _, size := range scaleSizes {
		for _, shape := range []scaleShape{manyTopics, fewTopics} {
			b.Run(fmt.Sprintf("shape=%s/partitions=%d", shape.name, size), func(b *testing.B) {
				img := scaleImage(size, shape)
				startTimer(b)
				for range b.N {
					if got := describeAllPages(n, img); got != size {
						b.Fatalf("%d partitions described, want %d", got, size)
					}
				}
				reportPerPartition(b, size)
			})
		}
	}
}

// describeAllPages walks every page of 2,000 partitions and returns the
// partitions described.
func describeAllPages(n *Handlers, img *metadata.Image) int { return describeAllPagesOf(n, img, 2000) }

// describeAllPagesOf walks every page of limit partitions.
func describeAllPagesOf(n *Handlers, img *metadata.Image, limit int32) int {
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	total := 0
	for {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit = limit
		req.Cursor = cursor
		resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
		n.describeTopicPartitions(scaleRequestContext(), img, req, resp)
		for _, t := range resp.Topics {
			total += len(t.Partitions)
		}
		if resp.NextCursor == nil {
			return total
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
}

// BenchmarkScaleListReassignments lists every reassignment in progress
// (a tenth of the partitions).
func BenchmarkScaleListReassignments(b *testing.B) {
	for _, size := range scaleSizes {
		b.Run(fmt.Sprintf("partitions=%d", size), func(b *testing.B) {
			img := scaleImage(size, manyTopics)
			startTimer(b)
			for range b.N {
				req := kmsg.NewPtrListPartitionReassignmentsRequest()
				req.Topics = nil
				resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
				listReassignments(img, req, resp)
				if len(resp.Topics) != len(img.Topics) {
					b.Fatalf("%d topics listed, want %d", len(resp.Topics), len(img.Topics))
				}
			}
			reportPerPartition(b, size)
		})
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
