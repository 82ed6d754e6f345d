package config

import (
	"errors"
	"testing"
)

func TestCleanerDynamicKeys(t *testing.T) {
	c := Default()
	for _, tc := range []struct {
		name, value string
		ok          bool
	}{
		{"log.cleaner.threads", "4", true},
		{"log.cleaner.threads", "0", false},
		{"log.cleaner.backoff.ms", "250", true},
		{"log.cleaner.backoff.ms", "0", false},
		{"log.cleaner.dedupe.buffer.size", "1048576", true},
		{"log.cleaner.dedupe.buffer.size", "10", false},
		{"log.cleaner.io.max.bytes.per.second", "1048576.5", true},
		{"log.cleaner.io.max.bytes.per.second", "x", false},
		{"log.cleaner.enable", "false", false}, // static in Kafka too
	} {
		err := c.ValidateClusterConfigs(map[string]string{tc.name: tc.value})
		if (err == nil) != tc.ok {
			t.Errorf("%s=%s: %v", tc.name, tc.value, err)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s=%s: %v is not ErrInvalid", tc.name, tc.value, err)
		}
	}

	got := c.CleanerSettingsIn(map[string]string{"log.cleaner.threads": "3", "log.cleaner.backoff.ms": "bad", "log.cleaner.io.max.bytes.per.second": "2048"})
	want := CleanerSettings{Threads: 3, BackoffMs: 15000, DedupeBufferSize: 134217728, IOMaxBytesPerSecond: 2048}
	if got != want {
		t.Fatalf("settings %+v, want %+v", got, want)
	}

	// DescribeConfigs: writable, and the dynamic value with its source.
	for _, e := range c.BrokerConfigEntriesIn(map[string]string{"log.cleaner.threads": "3"}) {
		switch e.Name {
		case "log.cleaner.threads":
			if e.ReadOnly || e.Value != "3" || e.Source != SourceDynamicDefaultBroker {
				t.Errorf("threads entry %+v", e)
			}
		case "log.cleaner.backoff.ms":
			if e.ReadOnly || e.Source != SourceDefaultConfig {
				t.Errorf("backoff entry %+v", e)
			}
		}
	}
}
