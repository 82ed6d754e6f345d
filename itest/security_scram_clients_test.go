package itest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	kgscram "github.com/segmentio/kafka-go/sasl/scram"
	"github.com/xdg-go/scram"

	"github.com/kbroker/kbroker/internal/testutil"
)

// scramClientRecords is how many records each client produces and reads
// back.
const scramClientRecords = 10

// Every client library produces as alice over SASL_SSL with SCRAM-SHA-512
// into a topic of her prefix and reads the records back with a consumer
// group of her prefix, under ACLs that allow nothing else.
func TestScramClients(t *testing.T) {
	s := startScramBroker(t)
	clients := []struct {
		name string
		run  func(t *testing.T, s *scramBroker, topic, group string) []string
	}{
		{"kcat", scramKcat},
		{"sarama", scramSarama},
		{"kafka-go", scramKafkaGo},
		{"confluent-kafka-python", scramConfluentPython},
		{"kafka-python", scramKafkaPython},
	}
	var topics []string
	for _, c := range clients {
		topics = append(topics, scramPrefix+c.name)
	}
	s.createTopics(t, topics...)
	s.grantAlice(t)

	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			topic, group := scramPrefix+c.name, scramPrefix+c.name+"-group"
			got := c.run(t, s, topic, group)
			want := numberedValues(c.name, scramClientRecords)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("%s read back %v, want %v", c.name, got, want)
			}
			s.waitCommitted(t, group, topic, scramClientRecords)
		})
	}

	// Outside her prefix, each Go client and librdkafka are refused.
	denied := "secret-clients"
	s.createTopics(t, denied)
	t.Run("refused/kcat", func(t *testing.T) {
		kcat, err := exec.LookPath("kcat")
		if err != nil {
			t.Skip("kcat not installed (apt-get install kcat)")
		}
		out, errOut, err := runCmdErr(30*time.Second, "x\n", kcat, append([]string{"-P", "-t", denied}, s.kcatSecurity()...)...)
		if err == nil || !strings.Contains(strings.ToLower(out+errOut), "topic authorization failed") {
			t.Fatalf("kcat -P to %s: %v, want a topic authorization failure\nstderr:\n%s", denied, err, tail(errOut, 1500))
		}
	})
	t.Run("refused/sarama", func(t *testing.T) {
		prod, err := sarama.NewSyncProducer([]string{s.secure}, s.saramaConfig())
		if err != nil {
			t.Fatalf("sarama.NewSyncProducer: %v", err)
		}
		defer prod.Close()
		_, _, err = prod.SendMessage(&sarama.ProducerMessage{Topic: denied, Value: sarama.StringEncoder("x")})
		if !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
			t.Fatalf("sarama produce to %s: %v, want %v", denied, err, sarama.ErrTopicAuthorizationFailed)
		}
	})
	t.Run("refused/kafka-go", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		w := &kafka.Writer{Addr: kafka.TCP(s.secure), Topic: denied, MaxAttempts: 1, Transport: s.kafkaGoTransport(t)}
		defer w.Close()
		// kafka-go's Transport answers the writer's Metadata from a cached
		// all-topics Metadata, where the broker hides what alice may not
		// describe: the topic looks missing rather than refused.
		err := w.WriteMessages(ctx, kafka.Message{Value: []byte("x")})
		if !errors.Is(err, kafka.UnknownTopicOrPartition) {
			t.Fatalf("kafka-go produce to %s: %v, want %v", denied, err, kafka.UnknownTopicOrPartition)
		}
	})
}

// kcatSecurity are kcat's arguments to connect to s as alice.
func (s *scramBroker) kcatSecurity() []string {
	return []string{"-b", s.secure, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
		"-X", "sasl.username=alice", "-X", "sasl.password=" + scramAlicePass, "-X", "ssl.ca.location=" + s.pki.caFile()}
}

func scramKcat(t *testing.T, s *scramBroker, topic, group string) []string {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed (apt-get install kcat)")
	}
	sec := s.kcatSecurity()
	input := strings.Join(numberedValues("kcat", scramClientRecords), "\n") + "\n"
	runCmd(t, 30*time.Second, input, kcat, append([]string{"-P", "-t", topic}, sec...)...)
	// A balanced consumer (-G) exits after -c records, committing them as
	// it closes.
	out, _ := runCmd(t, 45*time.Second, "", kcat, append([]string{"-G", group, topic, "-c", strconv.Itoa(scramClientRecords),
		"-X", "auto.offset.reset=earliest", "-f", "%s\n"}, sec...)...)
	return strings.Fields(out)
}

// xdgSCRAM is sarama's SCRAM client over github.com/xdg-go/scram, as
// sarama's documentation suggests.
type xdgSCRAM struct {
	scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (x *xdgSCRAM) Begin(user, pass, authzID string) error {
	c, err := x.HashGeneratorFcn.NewClient(user, pass, authzID)
	if err != nil {
		return fmt.Errorf("SCRAM client: %w", err)
	}
	x.conv = c.NewConversation()
	return nil
}

func (x *xdgSCRAM) Step(challenge string) (string, error) { return x.conv.Step(challenge) }
func (x *xdgSCRAM) Done() bool                            { return x.conv.Done() }

// saramaConfig is a sarama config to connect to s as alice.
func (s *scramBroker) saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Net.TLS.Enable = true
	cfg.Net.TLS.Config = &tls.Config{RootCAs: s.pki.pool()}
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
	cfg.Net.SASL.User, cfg.Net.SASL.Password = "alice", scramAlicePass
	cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{HashGeneratorFcn: scram.SHA512} }
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	return cfg
}

func scramSarama(t *testing.T, s *scramBroker, topic, group string) []string {
	cfg := s.saramaConfig()
	prod, err := sarama.NewSyncProducer([]string{s.secure}, cfg)
	if err != nil {
		t.Fatalf("sarama.NewSyncProducer: %v", err)
	}
	for _, v := range numberedValues("sarama", scramClientRecords) {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(v)}); err != nil {
			t.Fatalf("sarama produce %s: %v", v, err)
		}
	}
	if err := prod.Close(); err != nil {
		t.Fatalf("sarama producer close: %v", err)
	}

	g, err := sarama.NewConsumerGroup([]string{s.secure}, group, cfg)
	if err != nil {
		t.Fatalf("sarama.NewConsumerGroup: %v", err)
	}
	h := &saramaHandler{seen: map[string]bool{}}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	testutil.Eventually(t, 45*time.Second, func() error {
		if n := h.count(); n < scramClientRecords {
			return fmt.Errorf("consumed %d of %d", n, scramClientRecords)
		}
		return nil
	}, "sarama group consuming every record")
	s.waitCommitted(t, group, topic, scramClientRecords)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("sarama consume: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatalf("sarama group close: %v", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var got []string
	for v := range h.seen {
		got = append(got, v)
	}
	return got
}

// kafkaGoTransport is a kafka-go transport to s as alice.
func (s *scramBroker) kafkaGoTransport(t *testing.T) *kafka.Transport {
	t.Helper()
	mech, err := kgscram.Mechanism(kgscram.SHA512, "alice", scramAlicePass)
	if err != nil {
		t.Fatal(err)
	}
	return &kafka.Transport{TLS: &tls.Config{RootCAs: s.pki.pool()}, SASL: mech}
}

func scramKafkaGo(t *testing.T, s *scramBroker, topic, group string) []string {
	transport := s.kafkaGoTransport(t)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	w := &kafka.Writer{Addr: kafka.TCP(s.secure), Topic: topic, Balancer: &kafka.RoundRobin{},
		RequiredAcks: kafka.RequireAll, Transport: transport}
	var msgs []kafka.Message
	for _, v := range numberedValues("kafka-go", scramClientRecords) {
		msgs = append(msgs, kafka.Message{Value: []byte(v)})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("kafka-go WriteMessages: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("kafka-go Writer.Close: %v", err)
	}

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{s.secure}, GroupID: group, Topic: topic,
		StartOffset: kafka.FirstOffset, MaxWait: 500 * time.Millisecond,
		Dialer: &kafka.Dialer{Timeout: 10 * time.Second, TLS: transport.TLS, SASLMechanism: transport.SASL}})
	defer r.Close()
	seen := map[string]bool{}
	for len(seen) < scramClientRecords {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go group consumed %d of %d: %v", len(seen), scramClientRecords, err)
		}
		seen[string(m.Value)] = true
		if err := r.CommitMessages(ctx, m); err != nil {
			t.Fatalf("kafka-go commit: %v", err)
		}
	}
	var got []string
	for v := range seen {
		got = append(got, v)
	}
	return got
}

// scramPython runs script with bootstrap, CA file, user, password, topic,
// group, record count and value prefix; it returns the consumed values.
func scramPython(t *testing.T, s *scramBroker, module, script, topic, group, prefix string) []string {
	requirePython(t, module)
	res := runPython(t, script, s.secure, s.pki.caFile(), "alice", scramAlicePass, topic, group,
		strconv.Itoa(scramClientRecords), prefix)
	if t.Failed() {
		t.FailNow()
	}
	if len(res.Acked) != scramClientRecords {
		t.Fatalf("%d records acknowledged, want %d", len(res.Acked), scramClientRecords)
	}
	var got []string
	for _, r := range res.records(t, res.Consumed) {
		got = append(got, r.Value)
	}
	return got
}

const scramConfluentScript = `
import json, sys, time
from confluent_kafka import Producer, Consumer

bootstrap, cafile, user, password, topic, group, n, prefix = sys.argv[1:9]
n = int(n)
res = {"acked": [], "consumed": [], "errors": [], "info": ""}
sec = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL",
       "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": user,
       "sasl.password": password, "ssl.ca.location": cafile}

def delivered(err, msg):
    if err is not None:
        res["errors"].append("delivery: %s" % err)
    else:
        res["acked"].append([msg.partition(), msg.offset(), msg.value().decode()])

producer = Producer(dict(sec))
for i in range(n):
    producer.produce(topic, value=("%s-%06d" % (prefix, i)).encode(), on_delivery=delivered)
left = producer.flush(30)
if left:
    res["errors"].append("%d messages still in queue after flush" % left)

consumer = Consumer(dict(sec, **{"group.id": group, "enable.auto.commit": False,
                                 "auto.offset.reset": "earliest"}))
consumer.subscribe([topic])
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
else:
    consumer.commit(asynchronous=False)
consumer.close()
print(json.dumps(res))
`

func scramConfluentPython(t *testing.T, s *scramBroker, topic, group string) []string {
	return scramPython(t, s, "confluent_kafka", scramConfluentScript, topic, group, "confluent-kafka-python")
}

const scramKafkaPythonScript = `
import json, sys, time
from kafka import KafkaProducer, KafkaConsumer

bootstrap, cafile, user, password, topic, group, n, prefix = sys.argv[1:9]
n = int(n)
res = {"acked": [], "consumed": [], "errors": [], "info": ""}
sec = dict(bootstrap_servers=bootstrap, security_protocol="SASL_SSL",
           sasl_mechanism="SCRAM-SHA-512", sasl_plain_username=user,
           sasl_plain_password=password, ssl_cafile=cafile)

producer = KafkaProducer(acks="all", **sec)
futures = [(i, producer.send(topic, value=("%s-%06d" % (prefix, i)).encode())) for i in range(n)]
producer.flush(timeout=30)
for i, f in futures:
    try:
        md = f.get(timeout=30)
        res["acked"].append([md.partition, md.offset, "%s-%06d" % (prefix, i)])
    except Exception as e:
        res["errors"].append("send %d: %r" % (i, e))
producer.close(timeout=10)

consumer = KafkaConsumer(topic, group_id=group, enable_auto_commit=False,
                         auto_offset_reset="earliest", **sec)
deadline = time.time() + 30
while len(res["consumed"]) < n and time.time() < deadline:
    for tp, msgs in consumer.poll(timeout_ms=500).items():
        for m in msgs:
            res["consumed"].append([m.partition, m.offset, m.value.decode()])
if len(res["consumed"]) < n:
    res["errors"].append("consumed %d of %d before the deadline" % (len(res["consumed"]), n))
else:
    consumer.commit()
consumer.close()
print(json.dumps(res))
`

func scramKafkaPython(t *testing.T, s *scramBroker, topic, group string) []string {
	return scramPython(t, s, "kafka", scramKafkaPythonScript, topic, group, "kafka-python")
}
