package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/kbroker/kbroker/storage/remote"
	"github.com/kbroker/kbroker/tiered"
)

// startTiered starts the remote log manager (package tiered) when this
// broker has remote.log.storage.system.enable: the S3 store of the
// rsm.config.storage.* keys, the read cache, and the reads below the
// local log start of every remote-storage partition. It runs until bg
// ends; the store and the cache are closed after it.
func (n *Node) startTiered(bg context.Context, wg *sync.WaitGroup) error {
	cfg := &n.cfg
	if !cfg.RemoteLogStorageSystemEnable || !cfg.IsBroker() {
		return nil
	}
	rs := cfg.RemoteStorage
	store, err := remote.NewS3(remote.S3Config{
		Endpoint: rs.S3EndpointURL, Bucket: rs.S3BucketName, Region: rs.S3Region, Prefix: rs.S3Prefix,
		PathStyle: rs.S3PathStyleAccess, AccessKeyID: rs.AWSAccessKeyID, SecretAccessKey: rs.AWSSecretAccessKey,
	})
	if err != nil {
		return err
	}
	reader := remote.NewReader(store, remote.ReaderConfig{
		ChunkSize: rs.ChunkSize, CacheBytes: rs.FetchChunkCacheSize, Threads: int(cfg.RemoteLogReaderThreads),
	})
	m := tiered.New(tiered.Config{
		NodeID: cfg.NodeID, Store: store, Reader: reader, Metadata: n.store, Partitions: n.replicas,
		Logger:          n.logger.With("component", "tiered"),
		Interval:        time.Duration(cfg.RemoteLogManagerTaskIntervalMs) * time.Millisecond,
		Copiers:         int(cfg.RemoteLogManagerCopierThreadPoolSize),
		RetryBackoff:    time.Duration(cfg.RemoteLogManagerTaskRetryBackoffMs) * time.Millisecond,
		RetryBackoffMax: time.Duration(cfg.RemoteLogManagerTaskRetryBackoffMaxMs) * time.Millisecond,
		FetchMaxWait:    time.Duration(cfg.RemoteFetchMaxWaitMs) * time.Millisecond,
	})
	for _, c := range m.Collectors() {
		n.metrics.Registry.MustRegister(c)
	}
	n.replicas.SetRemoteLog(m)
	n.logger.Info("tiered storage on", "store", store.String())
	wg.Go(func() {
		m.Run(bg)
		reader.Close()
		store.Close()
	})
	return nil
}
