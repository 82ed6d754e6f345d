package config

import "strings"

// Tiered storage keys (KIP-405): the broker switch, the remote log
// manager's timings and bounds under Kafka's names, and the remote
// storage manager's own keys under remote.log.storage.manager.impl.prefix
// (rsm.config.), named as the common S3 RemoteStorageManager plugins name
// them. The secret access key is sensitive: DescribeConfigs returns it as
// null and nothing logs it (Config's String methods never print it).

// RemoteStorage is the remote storage manager's configuration
// (rsm.config.*).
type RemoteStorage struct {
	S3EndpointURL     string `kafka:"rsm.config.storage.s3.endpoint.url"`
	S3BucketName      string `kafka:"rsm.config.storage.s3.bucket.name"`
	S3Region          string `kafka:"rsm.config.storage.s3.region"`
	S3Prefix          string `kafka:"rsm.config.storage.s3.prefix"`
	S3PathStyleAccess bool   `kafka:"rsm.config.storage.s3.path.style.access.enabled"`
	AWSAccessKeyID    string `kafka:"rsm.config.storage.aws.access.key.id"`
	// AWSSecretAccessKey is sensitive.
	AWSSecretAccessKey  string `kafka:"rsm.config.storage.aws.secret.access.key"`
	ChunkSize           int64  `kafka:"rsm.config.chunk.size"`
	FetchChunkCacheSize int64  `kafka:"rsm.config.fetch.chunk.cache.size"`
}

var remoteKeys = []brokerKey{
	intKey("remote.log.manager.task.interval.ms", "30000", "Tiered storage: how often the remote log manager looks for segments to copy to, and delete from, remote storage.", 1,
		func(c *Config) *int64 { return &c.RemoteLogManagerTaskIntervalMs }),
	intKey("remote.log.manager.copier.thread.pool.size", "10", "Tiered storage: segments copied to remote storage at once, over all partitions this broker leads.", 1,
		func(c *Config) *int32 { return &c.RemoteLogManagerCopierThreadPoolSize }),
	intKey("remote.log.manager.task.retry.backoff.ms", "500", "Tiered storage: first wait before a failed copy or delete of a partition is retried; it doubles up to remote.log.manager.task.retry.backoff.max.ms.", 0,
		func(c *Config) *int64 { return &c.RemoteLogManagerTaskRetryBackoffMs }),
	intKey("remote.log.manager.task.retry.backoff.max.ms", "30000", "Tiered storage: longest wait before a failed copy or delete is retried.", 0,
		func(c *Config) *int64 { return &c.RemoteLogManagerTaskRetryBackoffMaxMs }),
	intKey("remote.log.reader.threads", "10", "Tiered storage: reads from remote storage in flight at once (consumer fetches and their read-ahead).", 1,
		func(c *Config) *int32 { return &c.RemoteLogReaderThreads }),
	intKey("remote.fetch.max.wait.ms", "500", "Tiered storage: longest a fetch waits for data from remote storage before it answers with what it has.", 1,
		func(c *Config) *int32 { return &c.RemoteFetchMaxWaitMs }),
	stringKey("rsm.config.storage.s3.endpoint.url", "", "Tiered storage: the S3 endpoint (http://host:port for an S3-compatible store); empty: AWS's.",
		func(c *Config) *string { return &c.RemoteStorage.S3EndpointURL }),
	stringKey("rsm.config.storage.s3.bucket.name", "", "Tiered storage: the bucket remote segments are kept in; required with remote.log.storage.system.enable.",
		func(c *Config) *string { return &c.RemoteStorage.S3BucketName }),
	stringKey("rsm.config.storage.s3.region", "us-east-1", "Tiered storage: the bucket's region.",
		func(c *Config) *string { return &c.RemoteStorage.S3Region }),
	stringKey("rsm.config.storage.s3.prefix", "", "Tiered storage: a prefix put before every object key (several clusters in one bucket).",
		func(c *Config) *string { return &c.RemoteStorage.S3Prefix }),
	boolKey("rsm.config.storage.s3.path.style.access.enabled", "true", "Tiered storage: address the bucket in the path (most S3-compatible stores) rather than the host name.",
		func(c *Config) *bool { return &c.RemoteStorage.S3PathStyleAccess }),
	stringKey("rsm.config.storage.aws.access.key.id", "", "Tiered storage: the access key id; empty: anonymous requests.",
		func(c *Config) *string { return &c.RemoteStorage.AWSAccessKeyID }),
	func() brokerKey {
		k := stringKey("rsm.config.storage.aws.secret.access.key", "", "Tiered storage: the secret access key. Sensitive: never shown or logged.",
			func(c *Config) *string { return &c.RemoteStorage.AWSSecretAccessKey })
		k.sensitive, k.typ = true, TypePassword
		return k
	}(),
	intKey("rsm.config.chunk.size", "4194304", "Tiered storage: bytes of a remote segment fetched at once for consumer reads.", 4096,
		func(c *Config) *int64 { return &c.RemoteStorage.ChunkSize }),
	intKey("rsm.config.fetch.chunk.cache.size", "67108864", "Tiered storage: bytes of remote segment chunks and indexes cached for consumer reads (read-ahead included); at least one chunk.", 4096,
		func(c *Config) *int64 { return &c.RemoteStorage.FetchChunkCacheSize }),
}

// checkRemoteStorage: with remote.log.storage.system.enable the bucket
// must be named.
func checkRemoteStorage(c *Config) error {
	if c.RemoteLogStorageSystemEnable && c.RemoteStorage.S3BucketName == "" {
		return invalid("rsm.config.storage.s3.bucket.name", "is required with remote.log.storage.system.enable=true")
	}
	return nil
}

// checkRemoteStorageEnable bounds the topic key remote.storage.enable:
// true needs the broker's remote.log.storage.system.enable.
func checkRemoteStorageEnable(t *TopicConfig, c *Config) error {
	if !t.RemoteStorageEnable {
		return nil
	}
	if !c.RemoteLogStorageSystemEnable {
		return errString("remote log storage is disabled on this broker (remote.log.storage.system.enable=false)")
	}
	return nil
}

// checkRemoteCompact: a compacted topic cannot be tiered (as Kafka).
func checkRemoteCompact(t TopicConfig) error {
	if t.RemoteStorageEnable && strings.Contains(t.CleanupPolicy, "compact") {
		return errString("remote storage is not supported for compacted topics (cleanup.policy " + t.CleanupPolicy + ")")
	}
	return nil
}
