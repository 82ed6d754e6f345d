package config

// The log cleaner's broker keys that Kafka reconfigures at runtime
// (LogCleaner's reconfigurable configs): set cluster-wide with
// IncrementalAlterConfigs on the broker resource with an empty name, they
// are applied to the running cleaner without a restart. The other keys
// Kafka lists there are message.max.bytes (a topic default, dynamic
// already) and log.cleaner.io.buffer.size / io.buffer.load.factor, which
// kbroker accepts and ignores.

// CleanerDynamicKeys are the cleaner keys ValidateClusterConfigs accepts.
var CleanerDynamicKeys = []string{"log.cleaner.threads", "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.max.bytes.per.second"}

// CleanerSettings are the cleaner keys in effect on this broker.
type CleanerSettings struct {
	Threads             int32
	BackoffMs           int64
	DedupeBufferSize    int64
	IOMaxBytesPerSecond float64
}

// CleanerSettingsIn returns the cleaner settings in effect: each key's
// cluster-wide dynamic value when set and valid, else this broker's
// static one.
func (c *Config) CleanerSettingsIn(cluster map[string]string) CleanerSettings {
	b := builder{Config: Config{
		LogCleanerThreads:             c.LogCleanerThreads,
		LogCleanerBackoffMs:           c.LogCleanerBackoffMs,
		LogCleanerDedupeBufferSize:    c.LogCleanerDedupeBufferSize,
		LogCleanerIOMaxBytesPerSecond: c.LogCleanerIOMaxBytesPerSecond,
	}}
	for _, name := range CleanerDynamicKeys {
		if v, ok := cluster[name]; ok && checkDynamicBrokerKey(name, v) == nil {
			_ = keyIndex[name].parse(&b, v)
		}
	}
	return CleanerSettings{
		Threads:             b.LogCleanerThreads,
		BackoffMs:           b.LogCleanerBackoffMs,
		DedupeBufferSize:    b.LogCleanerDedupeBufferSize,
		IOMaxBytesPerSecond: b.LogCleanerIOMaxBytesPerSecond,
	}
}
