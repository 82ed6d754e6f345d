package kafkaapi

import (
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/metadata"
)

// Growth tests of the requests answered from the image: what building a
// response allocates at 1,000 and at 10,000 partitions, compared (no
// clock). Describing one topic or one page must allocate the same at both
// sizes; describing every partition ten times as much, where a quadratic
// path allocates a hundred times as much. The bounds leave room for
// another test's goroutines allocating meanwhile.

const (
	perRequestRatio = 3
	linearRatio     = 25
)

// allocsAndBytes returns what one run of f allocates, on average.
func allocsAndBytes(runs int, f func()) (allocs, bytes float64) {
	f()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(runs), float64(after.TotalAlloc-before.TotalAlloc) / float64(runs)
}

func checkGrowth(t *testing.T, name string, maxRatio float64, shape scaleShape, op func(img *metadata.Image) func()) {
	t.Helper()
	a1, b1 := allocsAndBytes(5, op(scaleImage(1_000, shape)))
	a10, b10 := allocsAndBytes(5, op(scaleImage(10_000, shape)))
	t.Logf("%s: %.0f allocs, %.0f B at 1k partitions; %.0f allocs, %.0f B at 10k", name, a1, b1, a10, b10)
	if a10 > maxRatio*max(a1, 1) || b10 > maxRatio*max(b1, 1) {
		t.Errorf("%s grows more than %.0fx from 1k to 10k partitions", name, maxRatio)
	}
}

func TestMetadataResponsesGrowLinearly(t *testing.T) {
	n := scaleNode()
	checkGrowth(t, "Metadata of one topic", perRequestRatio, manyTopics, func(img *metadata.Image) func() {
		name := "topic-000000"
		req := []kmsg.MetadataRequestTopic{{Topic: &name}}
		return func() { n.metadataTopics(scaleRequestContext(), img, req, false, false) }
	})
	checkGrowth(t, "Metadata of every topic", linearRatio, manyTopics, func(img *metadata.Image) func() {
		return func() { n.metadataTopics(scaleRequestContext(), img, nil, true, false) }
	})
	// Ten topics of 100, then of 1,000 partitions: a page of 10 from the
	// middle of the first topic describes 10 partitions either way.
	checkGrowth(t, "DescribeTopicPartitions, one page", perRequestRatio, fewTopics, func(img *metadata.Image) func() {
		return func() {
			req := kmsg.NewPtrDescribeTopicPartitionsRequest()
			req.ResponsePartitionLimit = 10
			req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "topic-000000", Partition: 50}
			resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
			n.describeTopicPartitions(scaleRequestContext(), img, req, resp)
			if resp.NextCursor == nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 10 {
				t.Fatalf("page: %+v", resp)
			}
		}
	})
	for _, shape := range []scaleShape{manyTopics, fewTopics} {
		checkGrowth(t, "DescribeTopicPartitions, every page ("+shape.name+" topics)", linearRatio, shape, func(img *metadata.Image) func() {
			return func() { describeAllPagesOf(n, img, 10) }
		})
	}
	checkGrowth(t, "ListPartitionReassignments", linearRatio, manyTopics, func(img *metadata.Image) func() {
		return func() {
			req := kmsg.NewPtrListPartitionReassignmentsRequest()
			req.Topics = nil
			listReassignments(img, req, req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse))
		}
	})
}
