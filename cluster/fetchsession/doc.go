// Package fetchsession is the broker's cache of incremental fetch
// sessions (KIP-227), Kafka's FetchSessionCache: which partitions each
// follower's and consumer's session holds, their cached fetch state, and
// which partitions an answer must carry. cache.go explains the session
// protocol and the bounds.
//
// It owns the cache's bounds and eviction; the Fetch handler
// (cluster/kafkaapi) reads the records and calls Begin before and
// Context.Finish after. Cache's methods take its one mutex and never
// block on I/O, so they may be called from a request handler.
//
// It imports metadata (for the image's topic names and ids) and kmsg
// only, and must never import any cluster package: it knows nothing of
// connections, handlers or replication.
package fetchsession
