package cluster

import (
	"time"

	"github.com/kbroker/kbroker/purgatory"
	"github.com/kbroker/kbroker/replication"
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

// park puts a request's delayed operation in a purgatory, guarded (see
// guardedOp), and arranges that if the request's connection is dropped
// first the operation leaves the purgatory at once instead of at its
// deadline.
//
// keepsRequest says whether op still references the decoded request (a
// fetch rereads its partitions list). When it does not (an acks=all
// produce keeps only its response), the request's bytes are given back to
// queued.max.request.bytes now rather than when the response is written:
// otherwise produces waiting for replication could fill the bound and
// stop the connections carrying the follower fetches they wait for,
// stalling them all until their timeouts.
func park(p *purgatory.Purgatory[replication.TopicPartition], rc *RequestContext, op purgatory.Operation, deadline time.Time, keys []replication.TopicPartition, keepsRequest bool) {
	if !keepsRequest {
		rc.conn.releaseMem(rc.slot)
	}
	g := &guardedOp{op: op, rc: rc}
	// A check of any one key tries the operation, which sees the
	// connection dropped and completes without answering.
	rc.conn.onDrop(rc.slot, func() { p.Check(keys[0]) })
	p.TryCompleteElseWatch(g, deadline, keys...)
}
