package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"
)

func earliestOffset(t *testing.T, c *kafkatest.Conn, topic string) int64 {
	t.Helper()
	adm := kadm.NewClient(mustClient(t, c))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := offs.Lookup(topic, 0)
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	return o.Offset
}

func mustClient(t *testing.T, c *kafkatest.Conn) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.NC.RemoteAddr().String()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// DeleteRecords moves the log start offset; reads below it are out of
// range, and offsets above the high watermark cannot be deleted.
func TestDeleteRecords(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "trim", 1, map[string]*string{"segment.bytes": ptr("1024")})
	c := kafkatest.Dial(t, node.addr)
	for range 20 {
		c.RoundTrip(kafkatest.ProduceRequest(9, 1, "trim", map[int32][]byte{0: testBatch(t, 5, -1, -1, -1)}))
	}
	adm := kadm.NewClient(mustClient(t, c))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	tooFar := kadm.Offsets{}
	tooFar.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 1000})
	res, err := adm.DeleteRecords(ctx, tooFar)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup("trim", 0); r.Err != kerr.OffsetOutOfRange {
		t.Fatalf("delete beyond the high watermark: %v", r.Err)
	}

	to := kadm.Offsets{}
	to.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 42})
	res, err = adm.DeleteRecords(ctx, to)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup("trim", 0); r.Err != nil || r.LowWatermark != 42 {
		t.Fatalf("delete records: err %v low watermark %d", r.Err, r.LowWatermark)
	}
	if got := earliestOffset(t, c, "trim"); got != 42 {
		t.Fatalf("earliest offset %d, want 42", got)
	}
	fr := c.RoundTrip(fetchRequest("trim", 10, 1, 0)).(*kmsg.FetchResponse)
	if p := fr.Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != 42 {
		t.Fatalf("fetch below the log start offset: error %d log start %d", p.ErrorCode, p.LogStartOffset)
	}

	// The log start offset survives a restart.
	node.stop(t)
	node = startNode(t, node.dir)
	c = kafkatest.Dial(t, node.addr)
	if got := earliestOffset(t, c, "trim"); got != 42 {
		t.Fatalf("earliest offset after restart %d, want 42", got)
	}
}

// Segments beyond retention.bytes are deleted from the oldest, never the
// active one, and the log start offset follows.
func TestRetentionBytes(t *testing.T) {
	node := startNode(t, "", "log.retention.check.interval.ms=50")
	createTopic(t, node.addr, "retained", 1, map[string]*string{"segment.bytes": ptr("1024"), "retention.bytes": ptr("2048")})
	c := kafkatest.Dial(t, node.addr)
	for range 40 {
		c.RoundTrip(kafkatest.ProduceRequest(9, 1, "retained", map[int32][]byte{0: testBatch(t, 5, -1, -1, -1)}))
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		return earliestOffset(t, c, "retained") > 0
	}, "retention to delete old segments")
	if hw := latestOffset(t, c, "retained", 0); hw != 200 {
		t.Fatalf("high watermark %d after retention, want 200", hw)
	}
}

// A retention.bytes set with IncrementalAlterConfigs on an existing topic
// takes effect without a restart.
func TestRetentionChangeAppliesToOpenLog(t *testing.T) {
	node := startNode(t, "", "log.retention.check.interval.ms=50")
	createTopic(t, node.addr, "shrinking", 1, map[string]*string{"segment.bytes": ptr("1024")})
	c := kafkatest.Dial(t, node.addr)
	for range 40 {
		c.RoundTrip(kafkatest.ProduceRequest(9, 1, "shrinking", map[int32][]byte{0: testBatch(t, 5, -1, -1, -1)}))
	}
	if got := earliestOffset(t, c, "shrinking"); got != 0 {
		t.Fatalf("earliest offset %d before any retention limit", got)
	}
	adm := kadm.NewClient(mustClient(t, c))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v := "2048"
	res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.bytes", Value: &v}}, "shrinking")
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %v", err, res)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		return earliestOffset(t, c, "shrinking") > 0
	}, "retention to apply the new limit")
}
