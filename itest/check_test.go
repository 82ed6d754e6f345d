package itest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/clustercheck"
	"github.com/kbroker/kbroker/internal/testutil"
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
	testutil.Eventually(t, 10*time.Second, func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		td := md.Topics[topic]
		if td.Err != nil || len(td.Partitions) != int(partitions) {
			return fmt.Errorf("topic not ready: %+v", td)
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return fmt.Errorf("partition not ready: %+v", p)
			}
		}
		return nil
	}, "topic %s led", topic)
}

// The shared checker's types: what producers saw acknowledged, and the
// records read back.
type (
	acks = clustercheck.Acks
	rec  = clustercheck.Record
)

var newAcks = clustercheck.NewAcks

// endOffsets returns the high watermark of each partition of topic.
func endOffsets(t testing.TB, b *broker, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ends, err := clustercheck.EndOffsets(ctx, []string{b.addr}, topic)
	if err != nil {
		t.Fatal(err)
	}
	return ends
}

// consumeAll reads every partition of topic from offset 0 up to its high
// watermark with franz-go and returns the records by partition.
func consumeAll(t testing.TB, b *broker, topic string) map[int32][]rec {
	t.Helper()
	ends := endOffsets(t, b, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got, err := clustercheck.ReadAll(ctx, []string{b.addr}, topic, ends)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// checkLog runs the shared invariant checker on what was read back against
// what was acknowledged: offsets of each partition run 0, 1, 2, ...
// without gaps or repeats, and every acknowledged (partition, offset)
// holds the acknowledged value. A value written twice is allowed here
// (a non-idempotent client may retry); checkLogOnce forbids it.
func checkLog(t testing.TB, a *acks, got map[int32][]rec) clustercheck.Result {
	t.Helper()
	res := clustercheck.Check(a, got, nil)
	reportLines(t, res.Violations())
	t.Logf("checked: %d acknowledged, %d not acknowledged, %d read back, %d lost, %d misplaced",
		res.Acked, res.Failed, res.Read, len(res.Lost), len(res.Misplaced))
	return res
}

// checkLogOnce is checkLog for idempotent producers: no value may be read
// at two offsets.
func checkLogOnce(t testing.TB, a *acks, got map[int32][]rec) {
	t.Helper()
	res := checkLog(t, a, got)
	var dups []string
	for _, d := range res.Duplicated {
		dups = append(dups, "duplicated: "+d)
	}
	reportLines(t, dups)
}

// reportLines reports the first ten lines as errors and counts the rest.
func reportLines(t testing.TB, lines []string) {
	t.Helper()
	const maxReports = 10
	for i, l := range lines {
		if i == maxReports {
			t.Errorf("... and %d more problems", len(lines)-maxReports)
			break
		}
		t.Error(l)
	}
}

// checkValuesOnce checks that each value in want was read exactly once.
func checkValuesOnce(t testing.TB, want []string, got map[int32][]rec) {
	t.Helper()
	seen := make(map[string]int)
	for _, rs := range got {
		for _, r := range rs {
			seen[r.Value]++
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
