package config

// Share group configs (KIP-932): the GROUP config resource's keys a share
// group may override, with Kafka's names (GroupConfig), and the settings
// one share group ends up with, its overrides over the broker's
// group.share.* keys.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
)

// The share group config keys (Kafka's GroupConfig).
const (
	ShareSessionTimeoutMs       = "share.session.timeout.ms"
	ShareHeartbeatIntervalMs    = "share.heartbeat.interval.ms"
	ShareRecordLockDurationMs   = "share.record.lock.duration.ms"
	ShareDeliveryCountLimit     = "share.delivery.count.limit"
	SharePartitionMaxRecordLock = "share.partition.max.record.locks"
	ShareAutoOffsetReset        = "share.auto.offset.reset"
	ShareIsolationLevel         = "share.isolation.level"
)

// ShareGroupConfigKeys are the keys a GROUP resource accepts, sorted.
var ShareGroupConfigKeys = []string{
	ShareAutoOffsetReset, ShareDeliveryCountLimit, ShareHeartbeatIntervalMs, ShareIsolationLevel,
	SharePartitionMaxRecordLock, ShareRecordLockDurationMs, ShareSessionTimeoutMs,
}

// ShareGroupSettings are one share group's effective settings.
type ShareGroupSettings struct {
	SessionTimeout     time.Duration
	HeartbeatInterval  time.Duration
	RecordLockDuration time.Duration
	DeliveryCountLimit int32
	MaxRecordLocks     int32
	// AutoOffsetReset is "latest" or "earliest": where a share-partition
	// without state starts.
	AutoOffsetReset string
	// ReadCommitted is share.isolation.level=read_committed.
	ReadCommitted bool
}

// ShareGroupDefaults are the values of the GROUP resource's keys taken
// from the broker config, as DescribeConfigs lists them.
func (c *Config) ShareGroupDefaults() map[string]string {
	return map[string]string{
		ShareSessionTimeoutMs:       strconv.Itoa(int(c.GroupShareSessionTimeoutMs)),
		ShareHeartbeatIntervalMs:    strconv.Itoa(int(c.GroupShareHeartbeatIntervalMs)),
		ShareRecordLockDurationMs:   strconv.Itoa(int(c.GroupShareRecordLockDurationMs)),
		ShareDeliveryCountLimit:     strconv.Itoa(int(c.GroupShareDeliveryCountLimit)),
		SharePartitionMaxRecordLock: strconv.Itoa(int(c.GroupSharePartitionMaxRecordLocks)),
		ShareAutoOffsetReset:        "latest",
		ShareIsolationLevel:         "read_uncommitted",
	}
}

// ShareGroupSettingsFor is a share group's settings: overrides (its
// GROUP resource's configs, validated when set) over the broker's. A
// value that no longer validates (the broker bounds moved) falls back to
// the broker's.
func (c *Config) ShareGroupSettingsFor(overrides map[string]string) ShareGroupSettings {
	s := ShareGroupSettings{
		SessionTimeout:     time.Duration(c.GroupShareSessionTimeoutMs) * time.Millisecond,
		HeartbeatInterval:  time.Duration(c.GroupShareHeartbeatIntervalMs) * time.Millisecond,
		RecordLockDuration: time.Duration(c.GroupShareRecordLockDurationMs) * time.Millisecond,
		DeliveryCountLimit: c.GroupShareDeliveryCountLimit,
		MaxRecordLocks:     c.GroupSharePartitionMaxRecordLocks,
		AutoOffsetReset:    "latest",
	}
	for k, v := range overrides {
		if c.validateShareGroupConfig(k, v) != nil {
			continue
		}
		n, _ := strconv.Atoi(v)
		switch k {
		case ShareSessionTimeoutMs:
			s.SessionTimeout = time.Duration(n) * time.Millisecond
		case ShareHeartbeatIntervalMs:
			s.HeartbeatInterval = time.Duration(n) * time.Millisecond
		case ShareRecordLockDurationMs:
			s.RecordLockDuration = time.Duration(n) * time.Millisecond
		case ShareDeliveryCountLimit:
			s.DeliveryCountLimit = int32(n)
		case SharePartitionMaxRecordLock:
			s.MaxRecordLocks = int32(n)
		case ShareAutoOffsetReset:
			s.AutoOffsetReset = v
		case ShareIsolationLevel:
			s.ReadCommitted = v == "read_committed"
		}
	}
	return s
}

// ValidateShareGroupConfigs checks a GROUP resource's configs: known keys
// within Kafka's bounds (INVALID_CONFIG otherwise).
func (c *Config) ValidateShareGroupConfigs(set map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if err := c.validateShareGroupConfig(k, set[k]); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) validateShareGroupConfig(k, v string) error {
	between := func(lo, hi int) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return invalid(k, "%q is not an integer in [%d, %d]", v, lo, hi)
		}
		return nil
	}
	switch k {
	case ShareSessionTimeoutMs:
		// Kafka's group.share.min/max.session.timeout.ms defaults.
		return between(45000, 60000)
	case ShareHeartbeatIntervalMs:
		return between(5000, 15000)
	case ShareRecordLockDurationMs:
		return between(int(c.GroupShareMinRecordLockDurationMs), int(c.GroupShareMaxRecordLockDurationMs))
	case ShareDeliveryCountLimit:
		return between(2, 10)
	case SharePartitionMaxRecordLock:
		return between(100, 10000)
	case ShareAutoOffsetReset:
		if v != "latest" && v != "earliest" {
			return invalid(k, "%q: latest or earliest (by_duration is not supported)", v)
		}
	case ShareIsolationLevel:
		if v != "read_uncommitted" && v != "read_committed" {
			return invalid(k, "%q: read_uncommitted or read_committed", v)
		}
	default:
		return fmt.Errorf("%w: %s is not a group config", ErrInvalid, k)
	}
	return nil
}

// SourceGroupConfig is Kafka's GROUP_CONFIG source of a described value.
const SourceGroupConfig int8 = 8

// shareGroupKeyTypes are the GROUP keys' types as DescribeConfigs lists them.
var shareGroupKeyTypes = map[string]int8{
	ShareAutoOffsetReset: TypeString, ShareIsolationLevel: TypeString,
}

// ShareGroupConfigEntries describes a GROUP resource: every key, its
// override when set (GROUP_CONFIG), else the value the broker gives it
// (DEFAULT_CONFIG).
func (c *Config) ShareGroupConfigEntries(overrides map[string]string) []ConfigEntry {
	defaults := c.ShareGroupDefaults()
	out := make([]ConfigEntry, 0, len(ShareGroupConfigKeys))
	for _, k := range ShareGroupConfigKeys {
		typ, ok := shareGroupKeyTypes[k]
		if !ok {
			typ = TypeInt
		}
		e := ConfigEntry{Name: k, Value: defaults[k], Source: SourceDefaultConfig, IsDefault: true, Type: typ}
		if v, ok := overrides[k]; ok {
			e.Value, e.Source, e.IsDefault = v, SourceGroupConfig, false
			e.Synonyms = append(e.Synonyms, Synonym{k, v, SourceGroupConfig})
		}
		e.Synonyms = append(e.Synonyms, Synonym{k, defaults[k], SourceDefaultConfig})
		out = append(out, e)
	}
	return out
}
