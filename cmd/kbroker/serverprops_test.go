package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/clustercheck"
	"github.com/kbroker/kbroker/internal/testutil"
)

// kbroker starts from a server.properties written for Kafka 4.x: the keys
// it implements apply, the others are named once in a warning and shown by
// DescribeConfigs, and topics take every topic-level key.
func TestServeKafkaServerProperties(t *testing.T) {
	ports := testutil.MustReservePorts(t, 2)
	addr, ctrl := ports.Addr(0), ports.Addr(1)
	args := []string{"--config", filepath.Join("testdata", "server.properties"),
		// The ports and directory are the test's; everything else is the
		// file's.
		"--set", fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://%s", addr, ctrl),
		"--set", "advertised.listeners=PLAINTEXT://" + addr,
		"--set", "controller.quorum.voters=1@" + ctrl,
		"--set", "log.dirs=" + t.TempDir(),
	}
	ports.MustRelease(t)
	var stderr testutil.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan int, 1)
	go func() { exited <- serveContext(ctx, args, nil, &stderr) }()
	defer func() {
		cancel()
		select {
		case code := <-exited:
			if code != 0 {
				t.Errorf("exit code %d", code)
			}
		case <-time.After(30 * time.Second):
			t.Error("the broker did not stop")
		}
		if t.Failed() {
			t.Logf("broker log:\n%s", stderr.String())
		}
	}()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	reqCtx, reqCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer reqCancel()
	err = testutil.Poll(reqCtx, 30*time.Second, func() error {
		select {
		case code := <-exited:
			exited <- code
			return testutil.Permanent(fmt.Errorf("broker exited with %d", code))
		default:
		}
		return clustercheck.Ready(reqCtx, addr)
	})
	if err != nil {
		t.Fatalf("broker not serving: %v", err)
	}

	// One warning, naming the ignored keys of the file.
	log := stderr.String()
	if n := strings.Count(log, "accepted and are ignored"); n != 1 {
		t.Fatalf("%d ignored-key warnings", n)
	}
	for _, k := range []string{"num.network.threads", "num.io.threads", "socket.send.buffer.bytes", "num.recovery.threads.per.data.dir"} {
		if !strings.Contains(log, k) {
			t.Errorf("warning does not name %s", k)
		}
	}

	// DescribeConfigs shows implemented and ignored keys with their source.
	rcs, err := adm.DescribeBrokerConfigs(reqCtx, 1)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("1", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe broker: %v %v", err, rc.Err)
	}
	want := map[string]string{"num.io.threads": "8", "transaction.state.log.replication.factor": "1", "offsets.topic.replication.factor": "1", "log.cleaner.dedupe.buffer.size": "134217728", "log.cleaner.threads": "1", "log.retention.hours": "168", "num.partitions": "1"}
	for _, cfg := range rc.Configs {
		if w, ok := want[cfg.Key]; ok {
			if cfg.MaybeValue() != w || cfg.Source.String() != "STATIC_BROKER_CONFIG" {
				t.Errorf("%s = %q from %v", cfg.Key, cfg.MaybeValue(), cfg.Source)
			}
			delete(want, cfg.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("not described: %v", want)
	}

	// A topic with the compaction keys, then altered.
	configs := map[string]*string{}
	for k, v := range map[string]string{"cleanup.policy": "compact", "min.compaction.lag.ms": "1000",
		"max.compaction.lag.ms": "60000", "delete.retention.ms": "5000", "segment.jitter.ms": "100",
		"file.delete.delay.ms": "0", "compression.zstd.level": "5", "min.cleanable.dirty.ratio": "0.2"} {
		configs[k] = &v
	}
	res, err := adm.CreateTopic(reqCtx, 1, 1, configs, "compacted")
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	v := "0.7"
	ar, err := adm.AlterTopicConfigs(reqCtx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.cleanable.dirty.ratio", Value: &v}}, "compacted")
	if err != nil || ar[0].Err != nil {
		t.Fatalf("alter: %v %v", err, ar[0].Err)
	}
	trc, err := adm.DescribeTopicConfigs(reqCtx, "compacted")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trc.On("compacted", nil)
	if err != nil || tr.Err != nil {
		t.Fatalf("describe topic: %v %v", err, tr.Err)
	}
	got := map[string]string{}
	for _, cfg := range tr.Configs {
		got[cfg.Key] = cfg.MaybeValue() + " " + cfg.Source.String()
	}
	for k, w := range map[string]string{
		"min.cleanable.dirty.ratio": "0.7 DYNAMIC_TOPIC_CONFIG",
		"max.compaction.lag.ms":     "60000 DYNAMIC_TOPIC_CONFIG",
		"segment.bytes":             "1073741824 STATIC_BROKER_CONFIG",
		"preallocate":               "false DEFAULT_CONFIG",
	} {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
}
