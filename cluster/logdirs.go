package cluster

import (
	"context"
	"errors"
)

// Log dir failure, the node's part (Kafka's LogDirFailureHandler): the
// replication manager took the failed directory's partitions offline
// (replication logdir.go); the heartbeat loop reports them to the
// controller at once instead of at the next interval, so that their
// leadership moves away within a round trip. With no directory left the
// broker can serve nothing and stops, as Kafka's does ("all log dirs
// have failed"); Kafka halts the process, kbroker ends Node.Run with
// errAllLogDirsOffline after its controlled shutdown.

var errAllLogDirsOffline = errors.New("every log dir is offline")

// onLogDirFailure is replication's OnLogDirFailure hook.
func (n *Node) onLogDirFailure() {
	if n.logs.AllDirsOffline() {
		n.logger.Error("shutting down: every log dir is offline", "dirs", n.logs.OfflineDirs())
		n.halt(errAllLogDirsOffline)
		return
	}
	select {
	case n.offlineReport <- struct{}{}:
	default:
	}
}

// watchMetadataLog stops the node when a write to its Raft log failed (a
// full or failing metadata disk): as Kafka stops a node whose metadata
// log dir fails, rather than run on a log store it can no longer trust.
// Run returns the failure after the controlled shutdown.
func (n *Node) watchMetadataLog(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-n.store.Failed():
		err := n.store.FailedErr()
		n.logger.Error("shutting down: the metadata log store failed a write; free the disk or repair it, then restart", "dir", n.metadataConfig().Dir, "err", err)
		n.halt(err)
	}
}
