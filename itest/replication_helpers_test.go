package itest

import (
	"context"
	"encoding/binary"
	"io"
	"maps"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/clustercheck"
	"github.com/kbroker/kbroker/wire/record"
)

// clusterClient is a franz-go client seeded with every broker of c (running
// or not; controller-only nodes have no client listener), closed at the
// end of the test.
func clusterClient(t testing.TB, c *testCluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	var seeds []string
	for _, b := range c.brokers {
		if b.addr != "" {
			seeds = append(seeds, b.addr)
		}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatalf("franz-go client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// partStates returns every partition of topic in m.
var partStates = clustercheck.PartStates

// fullISR holds when topic has parts partitions, each led by an alive
// broker, without error, with isrSize ISR members that are all alive.
func fullISR(c *testCluster, topic string, parts, isrSize int) func(*kmsg.MetadataResponse) bool {
	return func(m *kmsg.MetadataResponse) bool {
		alive := aliveIDs(c)
		return clustercheck.FullISR(topic, parts, isrSize, func(id int32) bool { return alive[id] })(m)
	}
}

// allLedBy holds when every partition of topic is led by id and, if isr is
// not nil, has exactly that ISR (any order).
func allLedBy(topic string, parts int, id int32, isr []int32) func(*kmsg.MetadataResponse) bool {
	return func(m *kmsg.MetadataResponse) bool {
		ps := partStates(m, topic)
		if len(ps) != parts {
			return false
		}
		for _, p := range ps {
			if p.ErrorCode != 0 || p.Leader != id {
				return false
			}
			if isr != nil {
				got := slices.Clone(p.ISR)
				want := slices.Clone(isr)
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					return false
				}
			}
		}
		return true
	}
}

// createReplicated creates topic through node 1 with the given partitions,
// replication factor and configs, and waits until every partition has a
// live leader and a full ISR on every running broker.
func createReplicated(t testing.TB, c *testCluster, topic string, parts int32, rf int16, configs map[string]*string) *kmsg.MetadataResponse {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.alive()[0].addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).CreateTopic(ctx, parts, rf, configs, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("create %s: %v %v (%s)", topic, err, res.Err, res.ErrMessage)
	}
	return c.waitConverged(30*time.Second, topic+" led with full ISR", fullISR(c, topic, int(parts), int(rf)))
}

// rawProduce sends one Produce v8 request with one uncompressed,
// non-idempotent batch of values to addr for topic/partition and returns
// the partition's error code and base offset.
func rawProduce(t testing.TB, addr, topic string, partition int32, acks int16, values []string) (int16, int64) {
	t.Helper()
	now := time.Now().UnixMilli()
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{OffsetDelta: int32(i), Value: []byte(v)}
	}
	batch, err := record.Build(record.BatchSpec{
		PartitionLeaderEpoch: -1,
		BaseTimestamp:        now,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
	}, recs)
	if err != nil {
		t.Fatalf("building batch: %v", err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = 8
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
	const correlationID = 11
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("itest")).AppendRequest(nil, req, correlationID)
	if _, err := conn.Write(frame); err != nil {
		t.Fatalf("write Produce: %v", err)
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		t.Fatalf("reading Produce response size: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		t.Fatalf("reading Produce response: %v", err)
	}
	if len(body) < 4 || int32(binary.BigEndian.Uint32(body)) != correlationID {
		t.Fatalf("Produce response: bad correlation id")
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 8
	if err := resp.ReadFrom(body[4:]); err != nil {
		t.Fatalf("decoding Produce v8 response: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("Produce response: %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset
}

// compareReplicaLogs checks that every broker of c holds byte-identical
// segment bytes for each partition of topic up to hws[partition].
func compareReplicaLogs(t testing.TB, c *testCluster, topic string, hws map[int32]int64) {
	t.Helper()
	dirs := map[int32]string{}
	for i, b := range c.brokers {
		dirs[int32(i+1)] = b.dir
	}
	for _, p := range slices.Sorted(maps.Keys(hws)) {
		logs, err := clustercheck.ReplicaLogs(dirs, topic, p, hws[p])
		if err != nil {
			t.Errorf("%s-%d: %v", topic, p, err)
			continue
		}
		if err := clustercheck.CompareReplicas(logs, p, hws[p]); err != nil {
			t.Error(err)
			continue
		}
		t.Logf("p%d: %d replicas identical below the high watermark %d (%d bytes)", p, len(logs), hws[p], len(logs[1]))
	}
}
