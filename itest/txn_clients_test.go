package itest

import (
	"fmt"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// confluentTxnScript runs confluent-kafka-python's (librdkafka's)
// transactional producer: one transaction of n records committed, one of
// n aborted, one of n committed, all to partition 0 of topic.
const confluentTxnScript = `
import json, sys
from confluent_kafka import Producer

bootstrap, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
res = {"acked": [], "consumed": [], "errors": [], "info": ""}

def delivered(err, msg):
    if err is not None:
        res["errors"].append("delivery: %s" % err)
    else:
        res["acked"].append([msg.partition(), msg.offset(), msg.value().decode()])

producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "itest-" + topic,
                     "transaction.timeout.ms": 30000})
try:
    producer.init_transactions(30)
    for name, commit in (("c1", True), ("ab", False), ("c2", True)):
        producer.begin_transaction()
        for i in range(n):
            producer.produce(topic, value=("%s-%04d" % (name, i)).encode(), partition=0, on_delivery=delivered)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
except Exception as e:
    res["errors"].append("transaction: %r" % (e,))
print(json.dumps(res))
`

// A librdkafka transactional producer commits, aborts and commits; kcat
// (librdkafka too) with isolation.level=read_committed reads only the
// committed records and with read_uncommitted all of them, in offset
// order, without the markers.
func TestConfluentTransactionsKcatIsolation(t *testing.T) {
	t.Parallel()
	requirePython(t, "confluent_kafka")
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed (apt-get install kcat)")
	}
	n := pick(20, 100)
	b := startBroker(t, t.TempDir(), "transaction.state.log.num.partitions=3")
	topic := topicName(t)
	createTopic(t, b, topic, 1, nil)

	res := runPython(t, confluentTxnScript, b.addr, topic, strconv.Itoa(n))
	if got := len(res.Acked); got != 3*n {
		t.Fatalf("%d records acknowledged, want %d", got, 3*n)
	}
	values := func(names ...string) []string {
		var out []string
		for _, name := range names {
			for i := range n {
				out = append(out, fmt.Sprintf("%s-%04d", name, i))
			}
		}
		return out
	}
	for _, tc := range []struct {
		isolation string
		want      []string
	}{
		{"read_committed", values("c1", "c2")},
		{"read_uncommitted", values("c1", "ab", "c2")},
	} {
		t.Run(tc.isolation, func(t *testing.T) {
			// -e exits at the end of the partition: for read_committed
			// the last stable offset, which the final commit marker
			// has moved to the high watermark.
			out, _ := runCmd(t, 30*time.Second, "", kcat, "-b", b.addr, "-t", topic, "-C",
				"-o", "beginning", "-e", "-q", "-X", "isolation.level="+tc.isolation)
			checkLines(t, out, tc.want)
		})
	}
}
