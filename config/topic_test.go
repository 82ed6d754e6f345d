package config

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestTopicDefaults(t *testing.T) {
	c := Default()
	got := c.TopicDefaults()
	want := TopicConfig{
		CleanupPolicy:               "delete",
		CompressionType:             "producer",
		MaxMessageBytes:             1048588,
		MinInsyncReplicas:           1,
		RetentionMs:                 604800000,
		RetentionBytes:              -1,
		SegmentBytes:                1073741824,
		SegmentMs:                   604800000,
		SegmentIndexBytes:           10485760,
		IndexIntervalBytes:          4096,
		FlushMessages:               math.MaxInt64,
		FlushMs:                     math.MaxInt64,
		MessageTimestampType:        "CreateTime",
		MessageTimestampBeforeMaxMs: math.MaxInt64,
		MessageTimestampAfterMaxMs:  3600000,

		CompressionGzipLevel:        -1,
		CompressionLz4Level:         9,
		CompressionZstdLevel:        3,
		FileDeleteDelayMs:           60000,
		MessageDownconversionEnable: true,
		MinCleanableDirtyRatio:      0.5,
		DeleteRetentionMs:           86400000,
		MaxCompactionLagMs:          math.MaxInt64,
		LocalRetentionMs:            -2,
		LocalRetentionBytes:         -2,
	}
	if got != want {
		t.Errorf("TopicDefaults:\n got %+v\nwant %+v", got, want)
	}

	// Broker settings flow into topic defaults.
	c2, err := Load("", nil, []string{"compression.type=lz4", "log.retention.ms=1000", "log.flush.interval.ms=50", "min.insync.replicas=2", "default.replication.factor=3", "unclean.leader.election.enable=true"})
	if err != nil {
		t.Fatal(err)
	}
	td := c2.TopicDefaults()
	if td.CompressionType != "lz4" || td.RetentionMs != 1000 || td.FlushMs != 50 || td.MinInsyncReplicas != 2 || !td.UncleanLeaderElectionEnable {
		t.Errorf("TopicDefaults from broker settings: %+v", td)
	}
}

func TestValidateTopicConfigs(t *testing.T) {
	cases := []struct {
		overrides map[string]string
		want      string // "" = valid
		unknown   bool
	}{
		{nil, "", false},
		{map[string]string{"cleanup.policy": "compact"}, "", false},
		{map[string]string{"cleanup.policy": "compact, delete"}, "", false},
		{map[string]string{"cleanup.policy": "shred"}, `config: cleanup.policy: "shred" is not delete, compact or compact,delete`, false},
		{map[string]string{"compression.type": "gzip", "retention.ms": "-1", "segment.bytes": "1048576"}, "", false},
		{map[string]string{"compression.type": "brotli"}, `config: compression.type: "brotli" is not one of`, false},
		{map[string]string{"retention.ms": "soon"}, `config: retention.ms: "soon" is not an integer`, false},
		{map[string]string{"retention.ms": "-2"}, `retention.ms: "-2" is less than the minimum -1`, false},
		{map[string]string{"segment.bytes": "100"}, `segment.bytes: "100" is less than the minimum 1024`, false},
		{map[string]string{"max.message.bytes": "3000000000"}, `out of range for a 32-bit integer`, false},
		{map[string]string{"min.insync.replicas": "0"}, `min.insync.replicas: "0" is less than the minimum 1`, false},
		{map[string]string{"message.timestamp.type": "LogAppendTime"}, "", false},
		{map[string]string{"message.timestamp.type": "Now"}, `message.timestamp.type: "Now" is not one of CreateTime, LogAppendTime`, false},
		{map[string]string{"unclean.leader.election.enable": "maybe"}, `unclean.leader.election.enable: "maybe" is not a boolean`, false},
		{map[string]string{"retention.msx": "1"}, `config: unknown key "retention.msx"`, true},
		{map[string]string{"log.retention.ms": "1"}, `config: unknown key "log.retention.ms"`, true}, // broker key, not topic key
		// Errors come in key order, so the result is deterministic.
		{map[string]string{"zzz": "1", "aaa": "1"}, `config: unknown key "aaa"`, true},
	}
	for _, tc := range cases {
		err := ValidateTopicConfigs(tc.overrides)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: unexpected error %v", tc.overrides, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: err = %v, want %q", tc.overrides, err, tc.want)
		case tc.want != "" && tc.unknown != errors.Is(err, ErrUnknownKey):
			t.Errorf("%v: errors.Is(ErrUnknownKey) = %v", tc.overrides, !tc.unknown)
		case tc.want != "" && !tc.unknown && !errors.Is(err, ErrInvalid):
			t.Errorf("%v: not ErrInvalid", tc.overrides)
		}
	}
}

func TestResolveTopic(t *testing.T) {
	c, err := Load("", nil, []string{"compression.type=snappy", "log.segment.bytes=2048"})
	if err != nil {
		t.Fatal(err)
	}
	tc := c.ResolveTopic(map[string]string{
		"cleanup.policy":                  "delete,compact",
		"retention.ms":                    "5000",
		"max.message.bytes":               "100",
		"message.timestamp.after.max.ms":  "10",
		"message.timestamp.before.max.ms": "20",
		"unclean.leader.election.enable":  "true",
		"flush.ms":                        "7",
	})
	if tc.CleanupPolicy != "compact,delete" || tc.RetentionMs != 5000 || tc.MaxMessageBytes != 100 ||
		tc.MessageTimestampAfterMaxMs != 10 || tc.MessageTimestampBeforeMaxMs != 20 ||
		!tc.UncleanLeaderElectionEnable || tc.FlushMs != 7 {
		t.Errorf("overrides not applied: %+v", tc)
	}
	if tc.CompressionType != "snappy" || tc.SegmentBytes != 2048 {
		t.Errorf("broker defaults not inherited: %+v", tc)
	}
	// Invalid or unknown overrides are ignored, not half-applied.
	tc = c.ResolveTopic(map[string]string{"retention.ms": "x", "segment.bytes": "1", "bogus": "1"})
	if tc != c.TopicDefaults() {
		t.Errorf("invalid overrides changed the config: %+v", tc)
	}
}

func TestTopicConfigEntries(t *testing.T) {
	c, err := Load("", nil, []string{"compression.type=zstd"})
	if err != nil {
		t.Fatal(err)
	}
	entries := c.TopicConfigEntries(map[string]string{"retention.ms": "1000"})
	if len(entries) != len(topicKeys) {
		t.Fatalf("%d entries, want %d", len(entries), len(topicKeys))
	}
	for i := 1; i < len(entries); i++ {
		if entries[i-1].Name >= entries[i].Name {
			t.Errorf("entries not sorted: %s before %s", entries[i-1].Name, entries[i].Name)
		}
	}
	byName := map[string]ConfigEntry{}
	for _, e := range entries {
		byName[e.Name] = e
	}
	want := map[string]ConfigEntry{
		"retention.ms":     {Name: "retention.ms", Value: "1000", Source: SourceDynamicTopic},
		"compression.type": {Name: "compression.type", Value: "zstd", Source: SourceStaticBroker},
		"segment.bytes":    {Name: "segment.bytes", Value: "1073741824", IsDefault: true, Source: SourceDefaultConfig},
		"flush.ms":         {Name: "flush.ms", Value: "9223372036854775807", IsDefault: true, Source: SourceDefaultConfig},
	}
	for name, w := range want {
		g := byName[name]
		g.Synonyms, g.Type, g.Doc = nil, 0, ""
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: got %+v, want %+v", name, g, w)
		}
	}
}

// TestMaxMessageBytesBound: max.message.bytes (topic) and message.max.bytes
// (cluster-wide default) above socket.request.max.bytes are refused, at
// the node's own socket.request.max.bytes, and a stored out-of-bound value
// does not take effect.
func TestMaxMessageBytesBound(t *testing.T) {
	d := Default()
	raised, err := Load("", nil, []string{"socket.request.max.bytes=209715200"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		cfg     *Config
		topic   bool // topic key, else cluster-wide default
		value   string
		wantErr string
	}{
		{"topic at the default bound", &d, true, "104857600", ""},
		{"topic one past the bound", &d, true, "104857601", `max.message.bytes: "104857601" is larger than socket.request.max.bytes 104857600`},
		{"topic MaxInt32", &d, true, "2147483647", `is larger than socket.request.max.bytes 104857600`},
		{"topic under a raised bound", &raised, true, "209715200", ""},
		{"cluster default MaxInt32", &d, false, "2147483647", `message.max.bytes: "2147483647" is larger than socket.request.max.bytes`},
		{"cluster default at the bound", &d, false, "104857600", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.topic {
				err = tc.cfg.ValidateTopicConfigs(map[string]string{"max.message.bytes": tc.value})
			} else {
				err = tc.cfg.ValidateClusterConfigs(map[string]string{"message.max.bytes": tc.value})
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want ErrInvalid containing %q", err, tc.wantErr)
			}
		})
	}
	// The package-level functions use the built-in defaults.
	if err := ValidateTopicConfigs(map[string]string{"max.message.bytes": "2147483647"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("package-level ValidateTopicConfigs: %v", err)
	}
	// A value stored before the bound existed is ignored, not trusted.
	tc := d.ResolveTopicIn(map[string]string{"message.max.bytes": "2147483647"}, map[string]string{"max.message.bytes": "2147483647"})
	if tc.MaxMessageBytes != d.MessageMaxBytes {
		t.Fatalf("resolved max.message.bytes %d, want the default %d", tc.MaxMessageBytes, d.MessageMaxBytes)
	}
	// Static config: refused at start, naming the key.
	_, err = Load("", nil, []string{"message.max.bytes=2147483647"})
	if err == nil || !strings.Contains(err.Error(), "message.max.bytes") || !strings.Contains(err.Error(), "socket.request.max.bytes") {
		t.Fatalf("static message.max.bytes=MaxInt32: %v", err)
	}
}
