package itest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// pick returns short under testing.Short and long otherwise.
func pick(short, long int) int {
	if testing.Short() {
		return short
	}
	return long
}

var nonTopicChars = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// topicName is a fresh topic name derived from the test's name.
func topicName(t testing.TB) string {
	name := nonTopicChars.ReplaceAllString(t.Name(), "-")
	if len(name) > 180 {
		name = name[:180]
	}
	return fmt.Sprintf("%s-%06d", name, rand.IntN(1e6))
}

// newClient is a franz-go client for b, closed at the end of the test.
func newClient(t testing.TB, b *broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addr)}, opts...)...)
	if err != nil {
		t.Fatalf("franz-go client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createTopic creates topic with the given partitions (replication factor
// 1) and waits until every partition has a leader.
func createTopic(t testing.TB, b *broker, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, b))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err != nil {
		t.Fatalf("CreateTopic %s: %v", topic, err)
	}
	if resp.Err != nil {
		t.Fatalf("CreateTopic %s: %v (%s)", topic, resp.Err, resp.ErrMessage)
	}
	for attempt := 0; ; attempt++ {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			td := md.Topics[topic]
			ready := td.Err == nil && len(td.Partitions) == int(partitions)
			for _, p := range td.Partitions {
				ready = ready && p.Err == nil && p.Leader >= 0
			}
			if ready {
				return
			}
			err = fmt.Errorf("topic not ready: %+v", td)
		}
		if attempt >= 100 || ctx.Err() != nil {
			t.Fatalf("topic %s: %v", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// po is a (partition, offset) pair.
type po struct {
	p int32
	o int64
}

// acks collects what producers saw acknowledged. It is safe for concurrent
// use; conflicts (one offset acknowledged with two values) are errors.
type acks struct {
	mu        sync.Mutex
	vals      map[po]string
	conflicts []string
	failed    int // sends that ended in an error (not acknowledged)
}

func newAcks() *acks { return &acks{vals: make(map[po]string)} }

func (a *acks) ack(p int32, o int64, v string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := po{p, o}
	if old, ok := a.vals[k]; ok && old != v {
		a.conflicts = append(a.conflicts, fmt.Sprintf("p%d@%d acknowledged as %q and %q", p, o, old, v))
	}
	a.vals[k] = v
}

func (a *acks) fail() {
	a.mu.Lock()
	a.failed++
	a.mu.Unlock()
}

func (a *acks) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.vals)
}

// rec is one record read back.
type rec struct {
	p int32
	o int64
	v string
}

// endOffsets returns the high watermark of each partition of topic.
func endOffsets(t testing.TB, b *broker, topic string) map[int32]int64 {
	t.Helper()
	adm := kadm.NewClient(newClient(t, b))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	lo, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets %s: %v", topic, err)
	}
	ends := make(map[int32]int64)
	var errs []string
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			errs = append(errs, fmt.Sprintf("p%d: %v", o.Partition, o.Err))
		}
		ends[o.Partition] = o.Offset
	})
	if len(errs) > 0 {
		t.Fatalf("ListEndOffsets %s: %s", topic, strings.Join(errs, "; "))
	}
	return ends
}

// consumeAll reads every partition of topic from offset 0 up to its high
// watermark with franz-go and returns the records by partition.
func consumeAll(t testing.TB, b *broker, topic string) map[int32][]rec {
	t.Helper()
	ends := endOffsets(t, b, topic)
	start := make(map[int32]kgo.Offset)
	remaining := 0
	for p, end := range ends {
		if end > 0 {
			start[p] = kgo.NewOffset().At(0)
			remaining++
		}
	}
	got := make(map[int32][]rec)
	if remaining == 0 {
		return got
	}
	cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for polls := 0; remaining > 0 && polls < 10000; polls++ {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: timed out with %d partitions short of their end offsets %v", topic, remaining, ends)
		}
		fs.EachError(func(tp string, p int32, err error) {
			t.Errorf("fetch %s p%d: %v", tp, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			end := ends[r.Partition]
			if r.Offset >= end {
				return // produced after we listed the end offsets
			}
			got[r.Partition] = append(got[r.Partition], rec{r.Partition, r.Offset, string(r.Value)})
			if r.Offset == end-1 {
				remaining--
			}
		})
	}
	if remaining > 0 {
		t.Fatalf("consume %s: %d partitions short of their end offsets %v", topic, remaining, ends)
	}
	return got
}

// checkLog verifies what was read back against what was acknowledged:
// offsets of each partition run 0, 1, 2, ... without gaps or repeats, and
// every acknowledged (partition, offset) holds the acknowledged value.
func checkLog(t testing.TB, a *acks, got map[int32][]rec) {
	t.Helper()
	const maxReports = 10
	reports := 0
	report := func(format string, args ...any) {
		t.Helper()
		if reports < maxReports {
			t.Errorf(format, args...)
		}
		reports++
	}
	read := make(map[po]string)
	total := 0
	for p, rs := range got {
		for i, r := range rs {
			if r.o != int64(i) {
				report("partition %d: record #%d has offset %d (offsets must run 0,1,2,... without gaps or repeats)", p, i, r.o)
				break
			}
			read[po{p, r.o}] = r.v
		}
		total += len(rs)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.conflicts {
		report("conflicting acknowledgements: %s", c)
	}
	keys := make([]po, 0, len(a.vals))
	for k := range a.vals {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].p != keys[j].p {
			return keys[i].p < keys[j].p
		}
		return keys[i].o < keys[j].o
	})
	lost := 0
	for _, k := range keys {
		v, ok := read[k]
		switch {
		case !ok:
			lost++
			report("acknowledged p%d@%d (%q) not read back", k.p, k.o, a.vals[k])
		case v != a.vals[k]:
			lost++
			report("acknowledged p%d@%d as %q, read back %q", k.p, k.o, a.vals[k], v)
		}
	}
	if reports > maxReports {
		t.Errorf("... and %d more problems", reports-maxReports)
	}
	t.Logf("checked: %d acknowledged, %d not acknowledged, %d read back, %d acknowledged missing or different",
		len(a.vals), a.failed, total, lost)
}

// checkValuesOnce checks that each value in want was read exactly once.
func checkValuesOnce(t testing.TB, want []string, got map[int32][]rec) {
	t.Helper()
	seen := make(map[string]int)
	for _, rs := range got {
		for _, r := range rs {
			seen[r.v]++
		}
	}
	bad := 0
	for _, v := range want {
		if seen[v] != 1 && bad < 10 {
			t.Errorf("value %q read %d times, want once", v, seen[v])
			bad++
		}
	}
}
