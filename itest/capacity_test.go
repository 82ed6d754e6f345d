package itest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestCreateTopicsBeyondFileLimitFailsCleanly: a broker started under
// ulimit -n 256 registers the partition replicas it can open files for; a
// CreateTopics of 7,000 partitions is refused with POLICY_VIOLATION naming
// the broker, leaves no directory of the topic in log.dirs and no topic in
// Metadata, and the broker keeps serving produce and fetch on an existing
// topic.
func TestCreateTopicsBeyondFileLimitFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	b := startBrokerLimited(t, dir, 256)
	live := topicName(t) + "-live"
	createTopic(t, b, live, 2, nil)
	produceValues(t, []string{b.addr}, live, numberedValues("before", 20))

	huge := topicName(t) + "-huge"
	adm := kadm.NewClient(newClient(t, b))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resps, err := adm.CreateTopics(ctx, 7000, 1, nil, huge)
	if err != nil {
		t.Fatalf("CreateTopics request: %v", err)
	}
	resp := resps[huge]
	if resp.Err != kerr.PolicyViolation || !strings.Contains(resp.ErrMessage, "broker 1") ||
		!strings.Contains(resp.ErrMessage, "file-descriptor limit") {
		t.Fatalf("CreateTopics of 7000 partitions under ulimit -n 256: %v (%q), want POLICY_VIOLATION naming broker 1 and its file-descriptor limit",
			resp.Err, resp.ErrMessage)
	}
	t.Logf("refused: %s", resp.ErrMessage)

	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), huge+"-") {
			t.Fatalf("refused topic left %s in log.dirs", e.Name())
		}
	}
	md, err := adm.Metadata(ctx, huge)
	if err != nil {
		t.Fatal(err)
	}
	if td, ok := md.Topics[huge]; ok && td.Err != kerr.UnknownTopicOrPartition {
		t.Fatalf("refused topic in Metadata: %+v", td)
	}

	produceValues(t, []string{b.addr}, live, numberedValues("after", 20))
	checkValuesOnce(t, append(numberedValues("before", 20), numberedValues("after", 20)...), consumeAll(t, b, live))
}
