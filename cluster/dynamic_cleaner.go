package cluster

import (
	"context"
	"maps"
	"time"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/storage"
)

// The log cleaner's dynamic keys (log.cleaner.threads, backoff.ms,
// dedupe.buffer.size, io.max.bytes.per.second) are cluster-wide dynamic
// broker configs in the metadata image, cluster-wide or per broker (the
// broker's own values over the cluster's); every broker applies those in
// effect on it to its running cleaner as the image changes, as Kafka's
// LogCleaner reconfigures.

// applyCleanerConfigs hands the cleaner settings in effect under img to
// the storage manager. Applying unchanged settings changes nothing.
func (n *Node) applyCleanerConfigs(img *metadata.Image) {
	s := n.cfg.CleanerSettingsIn(img.DynamicBrokerConfigs(n.cfg.NodeID))
	n.logs.SetCleanerThreads(int(s.Threads))
	n.logs.SetCleanerBackoff(time.Duration(s.BackoffMs) * time.Millisecond)
	n.logs.SetCleaner(n.cfg.LogCleanerEnable, storage.CleanerLimits{
		DedupeBufferSize:    s.DedupeBufferSize,
		IOMaxBytesPerSecond: s.IOMaxBytesPerSecond,
	})
}

// watchCleanerConfigs applies the cleaner settings at start and whenever
// the cleaner keys in effect on this broker change, until ctx ends. (Reapplying
// unchanged ones would restart the I/O throttle's period.)
func (n *Node) watchCleanerConfigs(ctx context.Context) {
	var last map[string]string
	for {
		changed := n.store.Changed()
		img := n.store.Image()
		if cur := cleanerConfigsOf(img.DynamicBrokerConfigs(n.cfg.NodeID)); last == nil || !maps.Equal(cur, last) {
			n.applyCleanerConfigs(img)
			last = cur
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

func cleanerConfigsOf(cluster map[string]string) map[string]string {
	m := map[string]string{}
	for _, k := range config.CleanerDynamicKeys {
		if v, ok := cluster[k]; ok {
			m[k] = v
		}
	}
	return m
}
