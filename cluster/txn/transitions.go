package txn

import (
	"errors"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrNeedProducerID asks the caller of InitProducerID to allocate a
// producer id (outside any lock: it may wait for the controller) and call
// again with it.
var ErrNeedProducerID = errors.New("txn: a new producer id is needed")

// NoProducerID and NoEpoch are Kafka's "none" values.
const (
	NoProducerID int64 = -1
	NoEpoch      int16 = -1
)

// EpochExhausted is Kafka's isEpochExhausted: an epoch this high cannot be
// bumped for a fence and a marker, so the next InitProducerId rotates to a
// new producer id.
func EpochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// InitRequest is an InitProducerId with a transactional id.
type InitRequest struct {
	TransactionalID string
	Timeout         time.Duration
	// ProducerID and ProducerEpoch are the caller's current ones (KIP-360,
	// v3+), or NoProducerID and NoEpoch.
	ProducerID    int64
	ProducerEpoch int16
}

// Decision is the outcome of a request on a transactional id: Next is the
// metadata to write (nil: nothing to write), Markers says that Next is a
// Prepare state whose markers must be written to its partitions, and Err
// is the answer to the client (it may be set with Next: an InitProducerId
// that aborts the previous incarnation's transaction answers
// CONCURRENT_TRANSACTIONS while the abort completes).
type Decision struct {
	Next    *Metadata
	Markers bool
	Err     error
}

// InitProducerID decides an InitProducerId (Kafka's handleInitProducerId
// and prepareInitProducerIdTransit). cur is nil for an unknown id; newID is
// a freshly allocated producer id, or NoProducerID, in which case the
// answer may be ErrNeedProducerID. pending says a write is in flight.
func InitProducerID(cur *Metadata, pending bool, req InitRequest, newID int64, now time.Time) Decision {
	if cur == nil || cur.State == Dead {
		if newID == NoProducerID {
			return Decision{Err: ErrNeedProducerID}
		}
		return Decision{Next: &Metadata{
			TransactionalID: req.TransactionalID, ProducerID: newID, ProducerEpoch: 0,
			LastProducerID: NoProducerID, LastProducerEpoch: NoEpoch,
			Timeout: req.Timeout, State: Empty, Partitions: map[TopicPartition]struct{}{}, LastUpdate: now,
		}}
	}
	if pending {
		return Decision{Err: kerr.ConcurrentTransactions}
	}
	if req.ProducerID != NoProducerID && !validKIP360Producer(cur, req) {
		return Decision{Err: kerr.ProducerFenced}
	}
	switch cur.State {
	case PrepareCommit, PrepareAbort, PrepareEpochFence:
		return Decision{Err: kerr.ConcurrentTransactions}
	case Ongoing:
		// The previous incarnation left a transaction open: fence it
		// with a bumped epoch and abort; the client retries and gets the
		// epoch after that once the abort completed.
		next := abortOf(cur, now)
		return Decision{Next: next, Markers: true, Err: kerr.ConcurrentTransactions}
	}
	// Empty, CompleteCommit, CompleteAbort.
	next := cur.Clone()
	next.State, next.Timeout, next.LastUpdate, next.Start = Empty, req.Timeout, now, time.Time{}
	clear(next.Partitions)
	switch {
	case req.ProducerID != NoProducerID && req.ProducerID == cur.ProducerID && req.ProducerEpoch != cur.ProducerEpoch &&
		req.ProducerEpoch == cur.LastProducerEpoch:
		// A retry of a bump whose answer was lost: answer it again.
		return Decision{Next: next}
	case req.ProducerID != NoProducerID && req.ProducerID == cur.LastProducerID && req.ProducerID != cur.ProducerID:
		// A retry of a producer id rotation whose answer was lost.
		return Decision{Next: next}
	case req.ProducerID != NoProducerID && req.ProducerEpoch != cur.ProducerEpoch:
		return Decision{Err: kerr.ProducerFenced}
	case EpochExhausted(cur.ProducerEpoch + 1):
		if newID == NoProducerID {
			return Decision{Err: ErrNeedProducerID}
		}
		next.LastProducerID, next.LastProducerEpoch = cur.ProducerID, cur.ProducerEpoch
		next.ProducerID, next.ProducerEpoch = newID, 0
	default:
		next.LastProducerID, next.LastProducerEpoch = cur.ProducerID, cur.ProducerEpoch
		next.ProducerEpoch = cur.ProducerEpoch + 1
	}
	return Decision{Next: next}
}

// validKIP360Producer is Kafka's isValidProducerId: the producer id of the
// request is the current one, or the previous one whose epoch ran out (a
// retry after a rotation), or the metadata was just created.
func validKIP360Producer(cur *Metadata, req InitRequest) bool {
	return cur.ProducerEpoch == NoEpoch || req.ProducerID == cur.ProducerID ||
		(req.ProducerID == cur.LastProducerID && EpochExhausted(req.ProducerEpoch))
}

// checkProducer is the producer id and epoch check of AddPartitions,
// AddOffsets and EndTxn.
func checkProducer(cur *Metadata, pending bool, producerID int64, epoch int16) error {
	switch {
	case cur == nil || cur.State == Dead || producerID != cur.ProducerID:
		return kerr.InvalidProducerIDMapping
	case epoch != cur.ProducerEpoch:
		return kerr.ProducerFenced
	case pending:
		return kerr.ConcurrentTransactions
	}
	return nil
}

// AddPartitions decides an AddPartitionsToTxn (or the group partition of
// an AddOffsetsToTxn).
func AddPartitions(cur *Metadata, pending bool, producerID int64, epoch int16, tps []TopicPartition, now time.Time) Decision {
	if err := checkProducer(cur, pending, producerID, epoch); err != nil {
		return Decision{Err: err}
	}
	switch cur.State {
	case PrepareCommit, PrepareAbort, PrepareEpochFence:
		return Decision{Err: kerr.ConcurrentTransactions}
	case Ongoing:
		if cur.HasPartitions(tps) {
			return Decision{}
		}
	}
	next := cur.Clone()
	if cur.State != Ongoing {
		clear(next.Partitions)
		next.Start = now
	}
	next.State, next.LastUpdate = Ongoing, now
	for _, tp := range tps {
		next.Partitions[tp] = struct{}{}
	}
	return Decision{Next: next}
}

// EndTxn decides an EndTxn from the client (Kafka's endTransaction with
// isFromClient).
func EndTxn(cur *Metadata, pending bool, producerID int64, epoch int16, commit bool, now time.Time) Decision {
	if err := checkProducer(cur, pending, producerID, epoch); err != nil {
		return Decision{Err: err}
	}
	switch {
	case cur.State == Ongoing:
		next := cur.Clone()
		next.State, next.LastUpdate = PrepareAbort, now
		if commit {
			next.State = PrepareCommit
		}
		return Decision{Next: next, Markers: true}
	case cur.State == CompleteCommit && commit, cur.State == CompleteAbort && !commit:
		// A retry of an EndTxn whose answer was lost.
		return Decision{}
	case cur.State == PrepareCommit && commit, cur.State == PrepareAbort && !commit:
		return Decision{Err: kerr.ConcurrentTransactions}
	}
	return Decision{Err: kerr.InvalidTxnState}
}

// abortOf is the PrepareAbort of an Ongoing transaction the coordinator
// ends itself (timeout, or a new incarnation's InitProducerId): the epoch is
// bumped, unless exhausted, so the old producer is fenced by the markers.
func abortOf(cur *Metadata, now time.Time) *Metadata {
	next := cur.Clone()
	if !EpochExhausted(cur.ProducerEpoch) {
		next.LastProducerID, next.LastProducerEpoch = cur.ProducerID, cur.ProducerEpoch
		next.ProducerEpoch = cur.ProducerEpoch + 1
	}
	next.State, next.LastUpdate = PrepareAbort, now
	return next
}

// AbortTimedOut decides the coordinator's abort of an expired Ongoing
// transaction (Kafka's abortTimedOutTransactions); nil when cur is not
// one.
func AbortTimedOut(cur *Metadata, pending bool, now time.Time) *Metadata {
	if cur == nil || pending || !cur.Expired(now) {
		return nil
	}
	return abortOf(cur, now)
}

// Complete is the state after every marker of a Prepare state is written:
// CompleteCommit or CompleteAbort, without partitions.
func Complete(cur *Metadata, now time.Time) *Metadata {
	next := cur.Clone()
	next.State = CompleteAbort
	if cur.State == PrepareCommit {
		next.State = CompleteCommit
	}
	clear(next.Partitions)
	next.LastUpdate, next.Start = now, time.Time{}
	return next
}

// Expire reports whether a finished transactional id has been idle for
// transactional.id.expiration.ms and may be removed (a tombstone).
func Expire(cur *Metadata, pending bool, expiration time.Duration, now time.Time) bool {
	return cur != nil && !pending && (cur.State == Empty || cur.State.Complete()) && now.Sub(cur.LastUpdate) >= expiration
}
