package config

import (
	"errors"
	"testing"
	"time"
)

func TestShareGroupConfigs(t *testing.T) {
	c, err := build(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key, value string
		ok         bool
	}{
		{ShareAutoOffsetReset, "earliest", true},
		{ShareAutoOffsetReset, "by_duration:PT1H", false},
		{ShareIsolationLevel, "read_committed", true},
		{ShareIsolationLevel, "serializable", false},
		{ShareRecordLockDurationMs, "15000", true},
		{ShareRecordLockDurationMs, "14999", false}, // below group.share.min.record.lock.duration.ms
		{ShareRecordLockDurationMs, "60001", false},
		{ShareDeliveryCountLimit, "1", false},
		{ShareDeliveryCountLimit, "10", true},
		{SharePartitionMaxRecordLock, "99", false},
		{"consumer.session.timeout.ms", "45000", false},
	} {
		err := c.ValidateShareGroupConfigs(map[string]string{tc.key: tc.value})
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("%s=%s: %v, want ok %v", tc.key, tc.value, err, tc.ok)
		}
	}
	s := c.ShareGroupSettingsFor(map[string]string{ShareAutoOffsetReset: "earliest", ShareRecordLockDurationMs: "15000", ShareDeliveryCountLimit: "99"})
	if s.AutoOffsetReset != "earliest" || s.RecordLockDuration != 15*time.Second || s.DeliveryCountLimit != 5 || s.MaxRecordLocks != 2000 {
		t.Fatalf("settings %+v: want earliest, 15s, the broker's limit 5 (99 is out of bounds) and 2000 locks", s)
	}
}
