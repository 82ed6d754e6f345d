package itest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testutil"
)

// kafka-go's own tests (github.com/segmentio/kafka-go at the version
// go.mod requires, run from the module cache) against one kbroker node
// set up as its CI sets up Kafka (docker_compose_versions/
// docker-compose-400.yml there): PLAINTEXT on localhost:9092,
// SASL_PLAINTEXT on localhost:9093 with PLAIN (adminplain) and
// SCRAM-SHA-256/512 (adminscram256, adminscram512), the
// StandardAuthorizer with allow.everyone.if.no.acl.found and those users
// as super users, message.max.bytes of 200 MB, and the environment its
// CI gives the tests (KAFKA_VERSION, KAFKA_SKIP_NETTEST).
// group.initial.rebalance.delay.ms stays at Kafka's default, 3 s, as that
// file leaves it: several of its group tests start a reader on a topic
// that does not exist yet and get partitions only if the first join waits
// for the topic's auto-creation.
//
// The ports are fixed because kafka-go's tests name them: the test skips
// when either is taken. By default it runs kafkaGoQuick, a subset that
// fits in CI; KB_TEST_KAFKA_GO=all runs the whole suite (make
// test-kafka-go). The tests kafkaGoSkips names are skipped, each for the
// reason given there (and in the README).

// kafkaGoSkips are the kafka-go tests left out, by -skip pattern, with
// why. None is a kbroker feature missing.
var kafkaGoSkips = []struct{ pattern, why string }{
	{"TestReaderConsumerGroup/verify_offset_committed",
		"kafka-go's getOffsets (reader_test.go) builds a ConsumerGroup without its connect function and dereferences it: a nil pointer panic against any broker, which ends the run; TestKafkaGoReaderCommitOnClose checks the same commits"},
	{"TestReaderConsumerGroup/consumer_group_commits_on_close",
		"the same getOffsets panic; TestKafkaGoReaderCommitOnClose checks the commit on close"},
	{"TestReaderReadCompactedMessage",
		"it creates a topic with segment.bytes=200, which Kafka 3.x accepts (its minimum is 14) and kbroker refuses on purpose: its minimum is 1024 (config/keys.go, minSegmentBytes)"},
	{"TestReaderConsumerGroup/consumer_group_rebalance$",
		"two readers must each fetch 12 of 24 records spread over 3 partitions (8 each) without committing: a correct range split gives one of them a single partition, 8 records, so it passes only when a reader delivers records it queued in an earlier generation; TestKafkaGoReaderRebalance checks the rebalance itself"},
}

// kafkaGoQuick is the -run pattern of the default (CI) run: the
// connection tests (topic deletion among them), SASL, topic admin, the
// ACL APIs under the authorizer, and one group handshake.
const kafkaGoQuick = `^(TestConn|TestSASL|TestClientCreateTopics|TestClientDeleteTopics|TestClientCreateACLs|TestClientDescribeACLs|TestClientDeleteACLs|TestReaderConsumerGroup/basic_handshake)$`

const (
	kafkaGoModule = "github.com/segmentio/kafka-go"
	kafkaGoPlain  = "localhost:9092"
	kafkaGoSASL   = "localhost:9093"
)

// kafkaGoBroker starts the node kafka-go's tests expect, or skips when
// its ports are taken.
func kafkaGoBroker(t *testing.T) *broker {
	t.Helper()
	for _, addr := range []string{kafkaGoPlain, kafkaGoSASL} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("kafka-go's tests need %s free (they name it): %v", addr, err)
		}
		l.Close()
	}
	ctrl := testutil.MustReservePorts(t, 1)
	ctrlAddr := ctrl.Addr(0)
	ctrl.MustRelease(t)
	const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="adminplain" password="admin-secret" user_adminplain="admin-secret";`
	b := newBroker(t, 1, t.TempDir(), kafkaGoPlain, ctrlAddr, "1@"+ctrlAddr,
		"listeners=PLAINTEXT://"+kafkaGoPlain+",SASL_PLAINTEXT://"+kafkaGoSASL+",CONTROLLER://"+ctrlAddr,
		"advertised.listeners=PLAINTEXT://"+kafkaGoPlain+",SASL_PLAINTEXT://"+kafkaGoSASL,
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name=PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config="+plainJAAS,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found=true",
		"super.users=User:adminscram256;User:adminscram512;User:adminplain",
		"auto.create.topics.enable=true",
		"delete.topic.enable=true",
		// Kafka accepts message.max.bytes above socket.request.max.bytes;
		// kbroker refuses it, so the request bound is raised with it.
		"message.max.bytes=200000000",
		"socket.request.max.bytes=200000000",
		"num.partitions=1",
		"offsets.topic.replication.factor=1",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
	)
	b.args = append(b.args,
		"--add-scram", "SCRAM-SHA-256=[name=adminscram256,password=admin-secret-256]",
		"--add-scram", "SCRAM-SHA-512=[name=adminscram512,password=admin-secret-512]")
	b.start()
	warmGroupCoordinator(t, b)
	return b
}

// kafkaGoEvent is one line of go test -json.
type kafkaGoEvent struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// TestKafkaGoSuite runs kafka-go's tests against kbroker and fails for
// each kafka-go test that fails.
func TestKafkaGoSuite(t *testing.T) {
	if testing.Short() && os.Getenv("KB_TEST_KAFKA_GO") == "" {
		t.Skip("kafka-go's suite: not in -short runs")
	}
	b := kafkaGoBroker(t)
	args := []string{"test", "-json", "-count=1", "-timeout", "20m"}
	var skips []string
	for _, s := range kafkaGoSkips {
		skips = append(skips, s.pattern)
		t.Logf("skipped: %s: %s", s.pattern, s.why)
	}
	args = append(args, "-skip", strings.Join(skips, "|"))
	pkgs := []string{kafkaGoModule, kafkaGoModule + "/sasl"}
	switch run := os.Getenv("KB_TEST_KAFKA_GO"); run {
	case "all":
	case "":
		args = append(args, "-run", kafkaGoQuick)
	default:
		args = append(args, "-run", run)
	}
	args = append(args, pkgs...)

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = moduleRoot(t) // kafka-go at the version go.mod requires
	cmd.Env = append(os.Environ(), "KAFKA_VERSION=4.0.0", "KAFKA_SKIP_NETTEST=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	results := map[string]string{} // package/test: pass, fail or skip
	output := map[string]*strings.Builder{}
	var pkgFail []string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e kafkaGoEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			if output[key] == nil {
				output[key] = &strings.Builder{}
			}
			output[key].WriteString(e.Output)
		case "pass", "fail", "skip":
			if e.Test != "" {
				results[key] = e.Action
			} else if e.Action == "fail" {
				pkgFail = append(pkgFail, e.Package)
			}
		}
	}
	waitErr := cmd.Wait()
	counts := map[string]int{}
	var failed []string
	for key, r := range results {
		counts[r]++
		if r == "fail" && !hasFailedSubtest(results, key) {
			failed = append(failed, key)
		}
	}
	sort.Strings(failed)
	t.Logf("kafka-go %s: %d passed, %d failed, %d skipped in %v (go %s)",
		kafkaGoModule, counts["pass"], counts["fail"], counts["skip"], time.Since(start).Round(time.Second), strings.Join(args, " "))
	for _, key := range failed {
		t.Errorf("kafka-go %s failed:\n%s", key, outputTail(output[key], 60))
	}
	if waitErr != nil && len(failed) == 0 {
		// A build failure, a panic or a timeout: no test to blame.
		for _, p := range pkgFail {
			t.Errorf("kafka-go package %s failed:\n%s", p, outputTail(output[p+" "], 60))
		}
		t.Errorf("go test of kafka-go: %v\n%s; kbroker log tail:\n%s", waitErr, stderr.String(), b.logTail(40))
	}
	if counts["pass"] == 0 {
		t.Errorf("no kafka-go test passed")
	}
}

// hasFailedSubtest reports whether key (package and test) has a failed
// subtest, so that only the innermost failures are reported.
func hasFailedSubtest(results map[string]string, key string) bool {
	for k, r := range results {
		if r == "fail" && strings.HasPrefix(k, key+"/") {
			return true
		}
	}
	return false
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// outputTail returns the last n lines of b.
func outputTail(b *strings.Builder, n int) string {
	if b == nil {
		return "(no output)"
	}
	lines := strings.Split(strings.TrimRight(ansi.ReplaceAllString(b.String(), ""), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// moduleRoot is the directory of kbroker's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// kafkaGoReader is a kafka-go group reader with the timings of kafka-go's
// TestReaderConsumerGroup, and a short MaxWait so that Close (which
// waits for the fetches in flight) is quick.
func kafkaGoReader(b *broker, topic, group string, commitInterval time.Duration) *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{
		Brokers: []string{b.addr}, Topic: topic, GroupID: group,
		HeartbeatInterval: 2 * time.Second, RebalanceTimeout: 2 * time.Second,
		CommitInterval: commitInterval, RetentionTime: time.Hour,
		MinBytes: 1, MaxBytes: 1e6, MaxWait: 500 * time.Millisecond,
	})
}

// TestKafkaGoReaderRebalance: a second kafka-go reader joins a group
// whose first reader holds every partition (a Stable group): the group
// rebalances through JoinGroup/SyncGroup with kafka-go's client-side
// range assignor, the second reader is given partitions, and between them
// the readers deliver every record produced after it joined.
func TestKafkaGoReaderRebalance(t *testing.T) {
	t.Parallel()
	b := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	topic := topicName(t)
	createTopic(t, b, topic, 3, nil)
	group := topic + "-g"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	r1 := kafkaGoReader(b, topic, group, 0)
	defer r1.Close()
	produceValues(t, []string{b.addr}, topic, numberedValues("first", 3))
	for range 3 { // one per partition: r1 holds all three
		if _, err := r1.FetchMessage(ctx); err != nil {
			t.Fatalf("first reader: %v", err)
		}
	}

	r2 := kafkaGoReader(b, topic, group, 0)
	defer r2.Close()
	// Records produced before the rebalance ends are the first reader's
	// to deliver (it learns of the rebalance at its next heartbeat).
	waitGroupMembers(t, b, group, 2)
	values := numberedValues("second", 30)
	produceValues(t, []string{b.addr}, topic, values)

	type read struct {
		reader    int
		partition int
		value     string
	}
	reads := make(chan read)
	for i, r := range []*kafka.Reader{r1, r2} {
		go func() {
			for {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					return
				}
				select {
				case reads <- read{i + 1, m.Partition, string(m.Value)}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	seen := map[string]bool{}
	byReader := map[int]map[int]bool{1: {}, 2: {}}
	for len(seen) < len(values) {
		select {
		case rd := <-reads:
			if strings.HasPrefix(rd.value, "second-") {
				seen[rd.value] = true
				byReader[rd.reader][rd.partition] = true
			}
		case <-ctx.Done():
			t.Fatalf("read %d of %d records; partitions read by reader 1: %v, by reader 2: %v", len(seen), len(values), byReader[1], byReader[2])
		}
	}
	if len(byReader[2]) == 0 {
		t.Errorf("the second reader was given no partition: reader 1 read %v", byReader[1])
	}
	if len(byReader[2]) == 3 && len(byReader[1]) == 0 {
		t.Errorf("the second reader took every partition and the first none")
	}
	cancel()
}

// TestKafkaGoReaderCommitOnClose: what a kafka-go group reader commits
// (at once, or through its commit interval, flushed when the generation
// ends) is committed when Close returns, and a new reader of the group
// resumes after it. Kafka accepts these commits: they carry the member id
// and generation of the live member, before its LeaveGroup.
func TestKafkaGoReaderCommitOnClose(t *testing.T) {
	t.Parallel()
	b := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	for _, interval := range []time.Duration{0, 400 * time.Millisecond} {
		t.Run(fmt.Sprintf("interval-%v", interval), func(t *testing.T) {
			topic := topicName(t)
			createTopic(t, b, topic, 1, nil)
			group := topic + "-g"
			produceValues(t, []string{b.addr}, topic, numberedValues("c", 3))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			r := kafkaGoReader(b, topic, group, interval)
			if _, err := r.FetchMessage(ctx); err != nil {
				t.Fatal(err)
			}
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.CommitMessages(ctx, m); err != nil {
				t.Fatalf("commit: %v", err)
			}
			if err := r.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			if got := committed(t, []string{b.addr}, group, topic); got[0] != m.Offset+1 {
				t.Fatalf("committed after Close: %v, want partition 0 at %d", got, m.Offset+1)
			}
			r2 := kafkaGoReader(b, topic, group, 0)
			defer r2.Close()
			next, err := r2.FetchMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if next.Offset != m.Offset+1 {
				t.Errorf("a new reader resumed at offset %d, want %d", next.Offset, m.Offset+1)
			}
		})
	}
}

// waitGroupMembers waits until group is Stable with n members, each
// given an assignment.
func waitGroupMembers(t *testing.T, b *broker, group string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	testutil.Eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		gs, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		g := gs[group]
		if g.Err != nil {
			return g.Err
		}
		if g.State != "Stable" || len(g.Members) != n {
			return fmt.Errorf("%s with %d members", g.State, len(g.Members))
		}
		for _, m := range g.Members {
			if a, ok := m.Assigned.AsConsumer(); !ok || len(a.Topics) == 0 {
				return fmt.Errorf("member %s has no assignment yet", m.MemberID)
			}
		}
		return nil
	}, "group %s stable with %d members", group, n)
}

// warmGroupCoordinator waits until every __consumer_offsets partition is
// loaded: kafka-go's Conn tests send JoinGroup once, without retrying
// COORDINATOR_LOAD_IN_PROGRESS, right after the broker starts.
func warmGroupCoordinator(t *testing.T, b *broker) {
	t.Helper()
	cl := newClient(t, b)
	err := testutil.Poll(context.Background(), 60*time.Second, func() error {
		for i := range 200 { // covers the 50 partitions
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Group = fmt.Sprintf("kbroker-warm-%d", i)
			resp, err := req.RequestWith(context.Background(), cl)
			if err != nil {
				return err
			}
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the group coordinator did not load: %v", err)
	}
}
