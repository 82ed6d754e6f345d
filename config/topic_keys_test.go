package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// kafkaTopicKeys are the topic-level configs of Kafka 4.x (TopicConfig,
// LogConfig and the two replication throttling lists).
var kafkaTopicKeys = []string{
	"cleanup.policy", "compression.type", "compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
	"delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
	"follower.replication.throttled.replicas", "leader.replication.throttled.replicas",
	"index.interval.bytes", "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms", "max.message.bytes",
	"message.downconversion.enable", "message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type",
	"min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
	"remote.log.copy.disable", "remote.log.delete.on.disable", "remote.storage.enable",
	"retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
	"unclean.leader.election.enable",
}

func TestEveryKafkaTopicKey(t *testing.T) {
	for _, name := range kafkaTopicKeys {
		if _, ok := topicKeyIndex[name]; !ok {
			t.Errorf("topic key %s missing", name)
		}
	}
	if len(topicKeys) != len(kafkaTopicKeys) {
		t.Errorf("%d topic keys, Kafka has %d", len(topicKeys), len(kafkaTopicKeys))
	}
}

// Each topic key: a good value is accepted, applied and described as the
// topic's own (with its synonyms down to the built-in default); a bad one
// is refused naming the key; a value of its broker synonym becomes the
// topic default, described as STATIC_BROKER_CONFIG.
func TestTopicKeysTable(t *testing.T) {
	tests := []struct {
		key, good, want string // want: the described value ("" = good)
		bad, badMsg     string
		broker          string // a value for the broker synonym; "" = none
	}{
		{"compression.gzip.level", "9", "", "0", "not -1 or a level", "1"},
		{"compression.lz4.level", "17", "", "18", "more than the maximum 17", "12"},
		{"compression.zstd.level", "-5", "", "23", "more than the maximum 22", "19"},
		{"delete.retention.ms", "1000", "", "-1", "less than the minimum 0", "5000"},
		{"file.delete.delay.ms", "0", "", "-1", "less than the minimum 0", "1000"},
		{"max.compaction.lag.ms", "60000", "", "0", "less than the minimum 1", "3600000"},
		{"min.compaction.lag.ms", "60000", "", "-1", "less than the minimum 0", "1000"},
		{"min.cleanable.dirty.ratio", "0.1", "", "1.5", "not between 0 and 1", "0.25"},
		{"min.cleanable.dirty.ratio", "1", "1.0", "x", "not a number", "0.75"},
		{"segment.jitter.ms", "5000", "", "-1", "less than the minimum 0", "100"},
		{"preallocate", "true", "", "yes", "not a boolean", "true"},
		{"message.downconversion.enable", "false", "", "no", "not a boolean", ""},
		{"leader.replication.throttled.replicas", "0:1, 1:2", "0:1,1:2", "0-1", "partition:broker", ""},
		{"follower.replication.throttled.replicas", "*", "", "*,0:1", "partition:broker", ""},
		{"remote.storage.enable", "false", "", "true", "remote.log.storage.system.enable=false", ""},
		{"local.retention.ms", "1000", "", "-3", "less than the minimum -2", "2000"},
		{"local.retention.bytes", "-1", "", "-3", "less than the minimum -2", "2000"},
		{"remote.log.copy.disable", "true", "", "1", "not a boolean", ""},
		{"remote.log.delete.on.disable", "true", "", "1", "not a boolean", ""},
		{"unclean.leader.election.enable", "true", "", "1", "not a boolean", "true"},
		{"retention.ms", "1000", "", "-2", "less than the minimum -1", "3000"},
		{"segment.ms", "1000", "", "0", "less than the minimum 1", "3000"},
	}
	for _, tc := range tests {
		t.Run(tc.key+"="+tc.good, func(t *testing.T) {
			k := topicKeyIndex[tc.key]
			if err := ValidateTopicConfigs(map[string]string{tc.key: tc.good}); err != nil {
				t.Fatalf("good value refused: %v", err)
			}
			err := ValidateTopicConfigs(map[string]string{tc.key: tc.bad})
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.badMsg) {
				t.Fatalf("bad value %q: %v", tc.bad, err)
			}
			c := Default()
			want := tc.good
			if tc.want != "" {
				want = tc.want
			}
			e := entry(t, c.TopicConfigEntries(map[string]string{tc.key: tc.good}), tc.key)
			if e.Value != want || e.Source != SourceDynamicTopic || e.IsDefault || e.Type == 0 || e.Doc == "" {
				t.Fatalf("described %+v", e)
			}
			first, last := e.Synonyms[0], e.Synonyms[len(e.Synonyms)-1]
			wantDefaultName := tc.key
			if k.brokerKey != "" {
				wantDefaultName = k.brokerKey
			}
			if first != (Synonym{tc.key, want, SourceDynamicTopic}) || last.Name != wantDefaultName || last.Source != SourceDefaultConfig {
				t.Fatalf("synonyms %+v", e.Synonyms)
			}
			if tc.broker == "" {
				if k.brokerKey != "" {
					t.Fatalf("%s has broker synonym %s: give the case a broker value", tc.key, k.brokerKey)
				}
				return
			}
			c, err = Load("", nil, []string{k.brokerKey + "=" + tc.broker})
			if err != nil {
				t.Fatal(err)
			}
			e = entry(t, c.TopicConfigEntries(nil), tc.key)
			if e.Source != SourceStaticBroker || e.Synonyms[0].Name != k.brokerKey || e.Synonyms[0].Value != tc.broker {
				t.Fatalf("from the broker key: %+v", e)
			}
			// The cluster-wide dynamic default wins over the static key.
			e = entry(t, c.TopicConfigEntriesIn(map[string]string{k.brokerKey: tc.good}, nil), tc.key)
			if e.Source != SourceDynamicDefaultBroker || e.Value != want {
				t.Fatalf("from the cluster default: %+v", e)
			}
		})
	}
}

func entry(t *testing.T, es []ConfigEntry, name string) ConfigEntry {
	t.Helper()
	for _, e := range es {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("%s not described", name)
	return ConfigEntry{}
}

func TestResolveNewTopicKeys(t *testing.T) {
	c, err := Load("", nil, []string{"log.roll.jitter.hours=2", "log.cleaner.min.cleanable.ratio=0.3", "log.segment.delete.delay.ms=5"})
	if err != nil {
		t.Fatal(err)
	}
	tc := c.ResolveTopic(map[string]string{"max.compaction.lag.ms": "100", "compression.zstd.level": "7"})
	if tc.SegmentJitterMs != 2*msPerHour || tc.MinCleanableDirtyRatio != 0.3 || tc.FileDeleteDelayMs != 5 ||
		tc.MaxCompactionLagMs != 100 || tc.CompressionZstdLevel != 7 {
		t.Fatalf("%+v", tc)
	}
	// log.roll.jitter.ms wins over the hours.
	c, err = Load("", nil, []string{"log.roll.jitter.hours=2", "log.roll.jitter.ms=7"})
	if err != nil || c.TopicDefaults().SegmentJitterMs != 7 {
		t.Fatalf("jitter %v %v", c.LogRollJitterMs, err)
	}
}

// A server.properties written for Kafka: its meaningless keys are
// accepted and reported once; a key neither Kafka's nor kbroker's stops
// the load naming the key and the line.
func TestKafkaServerProperties(t *testing.T) {
	file := writeFile(t, `
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
log.cleaner.threads=2
group.coordinator.threads=1
controller.quorum.election.timeout.ms=1000
log.cleaner.dedupe.buffer.size=1048576
`)
	c, err := Load(file, []string{"KBROKER_NUM_REPLICA_FETCHERS=2"}, []string{"metric.reporters="})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range c.Ignored {
		names = append(names, s.Name+"="+s.Value)
	}
	want := "controller.quorum.election.timeout.ms=1000 group.coordinator.threads=1 metric.reporters= num.io.threads=8 num.network.threads=3 num.replica.fetchers=2 socket.send.buffer.bytes=102400"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("ignored:\n got %s\nwant %s", got, want)
	}
	if c.LogCleanerDedupeBufferSize != 1048576 || c.LogCleanerThreads != 2 {
		t.Fatal("log.cleaner.dedupe.buffer.size or log.cleaner.threads not applied")
	}
	w := c.IgnoredWarning()
	if strings.Count(w, "num.io.threads") != 1 || !strings.Contains(w, "ignored") {
		t.Fatalf("warning %q", w)
	}
	e := entry(t, c.BrokerConfigEntries(), "num.io.threads")
	if e.Value != "8" || e.Source != SourceStaticBroker || !e.ReadOnly || e.Type != TypeInt {
		t.Fatalf("described %+v", e)
	}
	if len(c.BrokerConfigEntries()) != len(keys)+len(c.Ignored) {
		t.Fatal("ignored keys not described")
	}

	bad := writeFile(t, "num.io.threads=8\nnum.io.thread=8\n")
	_, err = Load(bad, nil, nil)
	if !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), `"num.io.thread"`) || !strings.Contains(err.Error(), bad+":2") {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestQuorumBootstrapServers(t *testing.T) {
	_, err := Load("", nil, []string{"controller.quorum.bootstrap.servers=localhost:9093"})
	if err == nil || !strings.Contains(err.Error(), "controller.quorum.voters") || !strings.Contains(err.Error(), "--set") {
		t.Fatalf("bootstrap servers without voters: %v", err)
	}
	c, err := Load("", nil, []string{"controller.quorum.bootstrap.servers=localhost:9093", "controller.quorum.voters=1@localhost:9093"})
	if err != nil || len(c.ControllerQuorumVoters) != 1 {
		t.Fatalf("with voters: %v", err)
	}
}

// Tiered storage needs a bucket; remote.storage.enable=true needs the
// broker switch and a topic that is not compacted.
func TestTieredStorageKeys(t *testing.T) {
	_, err := Load("", nil, []string{"remote.log.storage.system.enable=true"})
	if err == nil || !strings.Contains(err.Error(), "rsm.config.storage.s3.bucket.name") {
		t.Fatalf("no bucket: %v", err)
	}
	c, err := Load("", nil, []string{"remote.log.storage.system.enable=true", "rsm.config.storage.s3.bucket.name=b",
		"rsm.config.storage.aws.secret.access.key=topsecret", "remote.log.manager.thread.pool.size=2"})
	if err != nil {
		t.Fatal(err)
	}
	if c.RemoteStorage.S3BucketName != "b" || c.RemoteStorage.ChunkSize != 4<<20 || c.RemoteLogManagerTaskIntervalMs != 30000 {
		t.Fatalf("loaded %+v, interval %d", c.RemoteStorage, c.RemoteLogManagerTaskIntervalMs)
	}
	for _, e := range c.BrokerConfigEntries() {
		if strings.Contains(e.Value, "topsecret") {
			t.Errorf("%s shows the secret access key", e.Name)
		}
	}
	tests := []struct {
		overrides map[string]string
		bad       string
	}{
		{map[string]string{"remote.storage.enable": "true"}, ""},
		{map[string]string{"remote.storage.enable": "true", "cleanup.policy": "compact"}, "compacted"},
		{map[string]string{"remote.storage.enable": "true", "cleanup.policy": "compact,delete"}, "compacted"},
	}
	for _, tc := range tests {
		err := c.ValidateTopicConfigs(tc.overrides)
		if tc.bad == "" && err != nil || tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%v: %v, want %q", tc.overrides, err, tc.bad)
		}
	}
}

// The ignored list holds no key another package owns (security,
// transactions, connections) and none kbroker implements.
func TestIgnoredKeysAreNotOwnedElsewhere(t *testing.T) {
	for _, name := range IgnoredKeyNames() {
		for _, p := range []string{"ssl.", "sasl.", "listener.name.", "transaction.", "connections.", "max.connection", "connection."} {
			if strings.HasPrefix(name, p) {
				t.Errorf("%s is not this package's to ignore", name)
			}
		}
		switch name {
		case "super.users", "authorizer.class.name", "allow.everyone.if.no.acl.found":
			t.Errorf("%s is not this package's to ignore", name)
		}
		if _, ok := keyIndex[name]; ok {
			t.Errorf("%s is implemented and ignored", name)
		}
	}
}

// The example in cmd/kbroker/testdata loads, with its ignored keys.
func TestExampleServerProperties(t *testing.T) {
	path := filepath.Join("..", "cmd", "kbroker", "testdata", "server.properties")
	c, err := Load(path, nil, []string{"log.dirs=" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Ignored) < 5 || c.NodeID != 1 || !c.IsBroker() || !c.IsController() {
		t.Fatalf("%+v", c.Ignored)
	}
}

func TestBrokerIDMustEqualNodeID(t *testing.T) {
	if _, err := Load("", nil, []string{"node.id=3", "broker.id=3", "controller.quorum.voters=3@localhost:9093"}); err != nil {
		t.Fatal(err)
	}
	_, err := Load("", nil, []string{"node.id=3", "broker.id=4", "controller.quorum.voters=3@localhost:9093"})
	if err == nil || !strings.Contains(err.Error(), "broker.id") || !strings.Contains(err.Error(), "node.id 3") {
		t.Fatalf("%v", err)
	}
}
