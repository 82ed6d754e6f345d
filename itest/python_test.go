package itest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// debianPython is the interpreter the Debian packages python3-kafka and
// python3-confluent-kafka install into (not whatever python3 is on PATH).
const debianPython = "/usr/bin/python3"

// requirePython skips the test unless debianPython can import module.
func requirePython(t *testing.T, module string) {
	t.Helper()
	if err := exec.Command(debianPython, "-c", "import "+module).Run(); err != nil {
		t.Skipf("%s cannot import %s (apt-get install python3-kafka python3-confluent-kafka): %v", debianPython, module, err)
	}
}

// pyResult is what the scripts print: acknowledged and consumed records
// as [partition, offset, value], plus errors.
type pyResult struct {
	Acked    [][3]any `json:"acked"`
	Consumed [][3]any `json:"consumed"`
	Errors   []string `json:"errors"`
	Info     string   `json:"info"`
}

func (r pyResult) records(t *testing.T, rows [][3]any) []rec {
	t.Helper()
	out := make([]rec, 0, len(rows))
	for _, row := range rows {
		p, ok1 := row[0].(float64)
		o, ok2 := row[1].(float64)
		v, ok3 := row[2].(string)
		if !ok1 || !ok2 || !ok3 {
			t.Fatalf("bad row from script: %v", row)
		}
		out = append(out, rec{Partition: int32(p), Offset: int64(o), Value: v})
	}
	return out
}

// runPython writes script to a file and runs it with args; it decodes the
// JSON the script prints as its last stdout line.
func runPython(t *testing.T, script string, args ...string) pyResult {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client.py")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr := runCmd(t, 90*time.Second, "", debianPython, append([]string{path}, args...)...)
	var res pyResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("script output is not JSON: %v\nstdout:\n%.2000s\nstderr:\n%s", err, out, stderr)
	}
	if len(res.Errors) > 0 {
		t.Errorf("script errors: %v\nstderr tail:\n%s", res.Errors, tail(stderr, 4000))
	}
	if n := strings.Count(stderr, "PROTOERR"); n > 0 {
		i := strings.Index(stderr, "PROTOERR")
		t.Logf("client logged %d protocol errors (PROTOERR), first: %.300s", n, stderr[max(0, i-40):])
	}
	if res.Info != "" {
		t.Logf("script: %s", res.Info)
	}
	return res
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// checkPython checks the script's own consumer against its acks, and a
// franz-go read of the topic against the same acks.
func checkPython(t *testing.T, b *broker, topic string, n int, res pyResult) {
	t.Helper()
	a := newAcks()
	for _, r := range res.records(t, res.Acked) {
		a.Ack(r.Partition, r.Offset, r.Value)
	}
	if a.Count() != n {
		t.Errorf("%d records acknowledged, want %d", a.Count(), n)
	}
	byPart := make(map[int32][]rec)
	for _, r := range res.records(t, res.Consumed) {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	t.Log("python consumer:")
	checkLog(t, a, byPart)
	t.Log("franz-go consumer:")
	checkLog(t, a, consumeAll(t, b, topic))
}

const kafkaPythonScript = `
import json, sys, time
from kafka import KafkaProducer, KafkaConsumer, TopicPartition

bootstrap, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
res = {"acked": [], "consumed": [], "errors": [], "info": ""}

producer = KafkaProducer(bootstrap_servers=bootstrap)
futures = [(i, producer.send(topic, value=("kp-%05d" % i).encode())) for i in range(n)]
producer.flush(timeout=60)
for i, f in futures:
    try:
        md = f.get(timeout=30)
        res["acked"].append([md.partition, md.offset, "kp-%05d" % i])
    except Exception as e:
        res["errors"].append("send %d: %r" % (i, e))
res["info"] = "producer api_version %s" % (producer.config.get("api_version"),)
producer.close(timeout=10)

consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                         enable_auto_commit=False, auto_offset_reset="earliest")
parts = sorted(consumer.partitions_for_topic(topic) or [])
tps = [TopicPartition(topic, p) for p in parts]
consumer.assign(tps)
consumer.seek_to_beginning(*tps)
deadline = time.time() + 30
while len(res["consumed"]) < n and time.time() < deadline:
    for tp, msgs in consumer.poll(timeout_ms=500).items():
        for m in msgs:
            res["consumed"].append([m.partition, m.offset, m.value.decode()])
if len(res["consumed"]) < n:
    res["errors"].append("consumed %d of %d before the deadline (partitions %s)" % (len(res["consumed"]), n, parts))
consumer.close()
print(json.dumps(res))
`

func TestKafkaPython(t *testing.T) {
	t.Parallel()
	requirePython(t, "kafka")
	n := pick(200, 500)
	b := startBroker(t, t.TempDir())
	topic := topicName(t)
	createTopic(t, b, topic, 3, nil)
	res := runPython(t, kafkaPythonScript, b.addr, topic, strconv.Itoa(n))
	checkPython(t, b, topic, n, res)
}

const confluentScript = `
import json, sys, time
from confluent_kafka import Producer, Consumer, TopicPartition, OFFSET_BEGINNING

bootstrap, topic, n, idem = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
res = {"acked": [], "consumed": [], "errors": [], "info": ""}

conf = {"bootstrap.servers": bootstrap}
if idem != "default":
    conf["enable.idempotence"] = idem == "true"
producer = Producer(conf)

def delivered(err, msg):
    if err is not None:
        res["errors"].append("delivery: %s" % err)
    else:
        res["acked"].append([msg.partition(), msg.offset(), msg.value().decode()])

for i in range(n):
    producer.produce(topic, value=("ck-%05d" % i).encode(), on_delivery=delivered)
    producer.poll(0)
left = producer.flush(60)
if left:
    res["errors"].append("%d messages still in queue after flush" % left)

consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "itest-" + topic,
                     "enable.auto.commit": False, "auto.offset.reset": "earliest"})
md = consumer.list_topics(topic, timeout=10)
parts = sorted(md.topics[topic].partitions.keys())
consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
deadline = time.time() + 30
while len(res["consumed"]) < n and time.time() < deadline:
    m = consumer.poll(0.5)
    if m is None:
        continue
    if m.error():
        res["errors"].append("consume: %s" % m.error())
        continue
    res["consumed"].append([m.partition(), m.offset(), m.value().decode()])
if len(res["consumed"]) < n:
    res["errors"].append("consumed %d of %d before the deadline" % (len(res["consumed"]), n))
consumer.close()
print(json.dumps(res))
`

func TestConfluentKafkaPython(t *testing.T) {
	t.Parallel()
	requirePython(t, "confluent_kafka")
	n := pick(200, 500)
	b := startBroker(t, t.TempDir())
	for _, idem := range []string{"default", "true"} {
		t.Run("idempotence="+idem, func(t *testing.T) {
			topic := topicName(t)
			createTopic(t, b, topic, 3, nil)
			res := runPython(t, confluentScript, b.addr, topic, strconv.Itoa(n), idem)
			checkPython(t, b, topic, n, res)
		})
	}
}
