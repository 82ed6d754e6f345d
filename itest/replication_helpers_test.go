package itest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"github.com/kbroker/kbroker/storage"
	"io"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/wire/record"
)

// clusterClient is a franz-go client seeded with every broker of c (running
// or not), closed at the end of the test.
func clusterClient(t testing.TB, c *testCluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	var seeds []string
	for _, b := range c.brokers {
		seeds = append(seeds, b.addr)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatalf("franz-go client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// partState is one partition as Metadata describes it.
type partState struct {
	leader, epoch int32
	replicas, isr []int32
	errCode       int16
}

func partStates(m *kmsg.MetadataResponse, topic string) map[int32]partState {
	out := map[int32]partState{}
	for _, tp := range m.Topics {
		if tp.Topic == nil || *tp.Topic != topic {
			continue
		}
		for _, p := range tp.Partitions {
			out[p.Partition] = partState{p.Leader, p.LeaderEpoch, p.Replicas, p.ISR, p.ErrorCode}
		}
	}
	return out
}

// fullISR holds when topic has parts partitions, each led by an alive
// broker, without error, with isrSize ISR members that are all alive.
func fullISR(c *testCluster, topic string, parts, isrSize int) func(*kmsg.MetadataResponse) bool {
	return func(m *kmsg.MetadataResponse) bool {
		alive := aliveIDs(c)
		ps := partStates(m, topic)
		if len(ps) != parts {
			return false
		}
		for _, p := range ps {
			if p.errCode != 0 || !alive[p.leader] || len(p.isr) != isrSize {
				return false
			}
			for _, id := range p.isr {
				if !alive[id] {
					return false
				}
			}
		}
		return true
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
			if p.errCode != 0 || p.leader != id {
				return false
			}
			if isr != nil {
				got := slices.Clone(p.isr)
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

// logUpTo returns the concatenated segments of topic-partition in log dir,
// cut at the first batch whose base offset is >= hw.
func logUpTo(t testing.TB, logDir, topic string, partition int32, hw int64) []byte {
	t.Helper()
	log, err := storage.ReadLogBelow(filepath.Join(logDir, fmt.Sprintf("%s-%d", topic, partition)), hw)
	if err != nil {
		t.Errorf("%s %s-%d: %v", logDir, topic, partition, err)
	}
	return log
}

// lastOffsetIn returns the last offset of the last whole batch in log.
func lastOffsetIn(log []byte) int64 {
	last := int64(-1)
	for len(log) > 0 {
		b, next, err := record.Parse(log)
		if err != nil {
			break
		}
		last = b.LastOffset()
		log = next
	}
	return last
}

// batchAt describes the batch containing byte pos of log.
func batchAt(log []byte, pos int) string {
	at := 0
	for len(log) > 0 {
		b, next, err := record.Parse(log)
		if err != nil {
			return fmt.Sprintf("unparseable at byte %d: %v", at, err)
		}
		if pos < at+len(b) {
			return fmt.Sprintf("batch at byte %d: base offset %d, last offset %d, leader epoch %d, producer %d/%d seq %d, crc %08x, %d bytes",
				at, b.BaseOffset(), b.LastOffset(), b.PartitionLeaderEpoch(), b.ProducerID(), b.ProducerEpoch(), b.BaseSequence(), b.CRC(), len(b))
		}
		at += len(b)
		log = next
	}
	return fmt.Sprintf("past the end (%d bytes)", at)
}

// compareReplicaLogs checks that every broker of c holds byte-identical
// segment bytes for each partition of topic up to hws[partition].
func compareReplicaLogs(t testing.TB, c *testCluster, topic string, hws map[int32]int64) {
	t.Helper()
	parts := make([]int32, 0, len(hws))
	for p := range hws {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		hw := hws[p]
		var ref []byte
		var sizes []string
		for i, b := range c.brokers {
			got := logUpTo(t, b.dir, topic, p, hw)
			sizes = append(sizes, fmt.Sprintf("node %d: %d bytes to offset %d", i+1, len(got), lastOffsetIn(got)))
			if last := lastOffsetIn(got); last != hw-1 {
				t.Errorf("p%d node %d: log up to the high watermark %d ends at offset %d, want %d", p, i+1, hw, last, hw-1)
			}
			if i == 0 {
				ref = got
				continue
			}
			if !bytes.Equal(ref, got) {
				n := min(len(ref), len(got))
				d := n
				for j := 0; j < n; j++ {
					if ref[j] != got[j] {
						d = j
						break
					}
				}
				t.Errorf("p%d: node 1 and node %d differ below the high watermark %d (%d vs %d bytes), first at byte %d:\n  node 1: %s\n  node %d: %s",
					p, i+1, hw, len(ref), len(got), d, batchAt(ref, d), i+1, batchAt(got, d))
			}
		}
		t.Logf("p%d high watermark %d: %s", p, hw, strings.Join(sizes, "; "))
	}
}

// ackClock records when acknowledgements arrived, per partition.
type ackClock struct {
	mu    sync.Mutex
	times []time.Time
	parts []int32
}

func (a *ackClock) ack(p int32, at time.Time) {
	a.mu.Lock()
	a.times = append(a.times, at)
	a.parts = append(a.parts, p)
	a.mu.Unlock()
}

// gaps returns the longest time without any acknowledgement, and per
// partition, in [from, to], counting from the last acknowledgement before
// from (or from itself).
func (a *ackClock) gaps(from, to time.Time) (time.Duration, map[int32]time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	type ev struct {
		at time.Time
		p  int32
	}
	evs := make([]ev, len(a.times))
	for i := range a.times {
		evs[i] = ev{a.times[i], a.parts[i]}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	overall := time.Duration(0)
	per := map[int32]time.Duration{}
	lastAll := from
	lastP := map[int32]time.Time{}
	for _, e := range evs {
		if e.at.Before(from) {
			lastAll = e.at
			lastP[e.p] = e.at
			continue
		}
		if e.at.After(to) {
			break
		}
		overall = max(overall, e.at.Sub(lastAll))
		lastAll = e.at
		prev, ok := lastP[e.p]
		if !ok {
			prev = from
		}
		per[e.p] = max(per[e.p], e.at.Sub(prev))
		lastP[e.p] = e.at
	}
	return overall, per
}
