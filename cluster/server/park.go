package server

import (
	"time"

	"github.com/kbroker/kbroker/purgatory"
)

// Park puts a request's delayed operation in a purgatory, guarded (see
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
func Park[K comparable](p *purgatory.Purgatory[K], rc *RequestContext, op purgatory.Operation, deadline time.Time, keys []K, keepsRequest bool) {
	if !keepsRequest {
		rc.conn.releaseMem(rc.slot)
	}
	g := &guardedOp{op: op, rc: rc}
	// A check of any one key tries the operation, which sees the
	// connection dropped and completes without answering.
	rc.conn.onDrop(rc.slot, func() { p.Check(keys[0]) })
	p.TryCompleteElseWatch(g, deadline, keys...)
}
