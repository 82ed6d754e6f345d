package kafkaapi

import (
	"time"
)

// Caps on how long a request may wait in a purgatory, whatever the client
// asks. Both are the default request.timeout.ms of Kafka clients (30 s):
// a client gives up on a request after that, so waiting longer only holds
// memory and an in-flight slot for an answer nobody reads. Kafka itself
// does not clamp them (it relies on the client's own timeout); a parked
// request here also keeps its connection from counting as idle, so an
// unbounded wait would defeat connections.max.idle.ms.
const (
	// maxFetchWait caps a Fetch's MaxWaitMillis.
	maxFetchWait = 30 * time.Second
	// maxProduceTimeout caps an acks=all Produce's TimeoutMillis; when it
	// passes the partitions still waiting get REQUEST_TIMED_OUT (their
	// batches stay appended and replicate as usual).
	maxProduceTimeout = 30 * time.Second
)

// cappedWait turns a client's wait in milliseconds into a duration no
// longer than limit.
func cappedWait(ms int32, limit time.Duration) time.Duration {
	return min(time.Duration(ms)*time.Millisecond, limit)
}
