package sharepart

// ShareFetch and ShareAcknowledge on the partition leader: share
// sessions (KIP-932's share session epoch), acknowledgements, the
// acquisition of records, and the wait for records within MaxWait.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/share"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

// Session epochs with a meaning of their own.
const (
	// OpenEpoch opens a new share session (and drops the member's old
	// one on this broker).
	OpenEpoch = 0
	// CloseEpoch closes the session after its acknowledgements.
	CloseEpoch = -1
)

// TP is a topic partition by topic id.
type TP struct {
	TopicID   [16]byte
	Partition int32
}

type sessionKey struct{ group, member string }

// session is one member's share session on this broker.
type session struct {
	epoch int32 // the epoch its next request must carry
	parts map[TP]bool
}

// PartitionRequest is one partition of a ShareFetch or ShareAcknowledge.
type PartitionRequest struct {
	TP
	MaxBytes int
	Acks     []share.Ack
	// HasAcks: the request carried acknowledgement batches for it.
	HasAcks bool
}

// FetchRequest is a ShareFetch (or, with Acknowledge, a
// ShareAcknowledge: no fetching).
type FetchRequest struct {
	Group, Member string
	Epoch         int32
	Partitions    []PartitionRequest
	Forget        []TP
	MaxRecords    int
	MaxBytes      int
	Wait          time.Duration
	// Acknowledge: a ShareAcknowledge; it never opens a session nor
	// fetches.
	Acknowledge bool
}

// PartitionResult is one partition's answer.
type PartitionResult struct {
	TP
	Err      error // the fetch's
	AckErr   error // the acknowledgement's
	HadAcks  bool
	Records  []byte
	Acquired []share.AcquiredRecords
}

// FetchResult is the answer; Err is top-level (session errors).
type FetchResult struct {
	Err          error
	Partitions   []PartitionResult
	LockDuration time.Duration
}

// ErrInvalidRequest is a request the session rules refuse
// (acknowledgements when opening a session).
var ErrInvalidRequest = kerr.InvalidRequest

// Fetch serves a ShareFetch or a ShareAcknowledge.
func (m *Manager) Fetch(ctx context.Context, req FetchRequest) FetchResult {
	res := FetchResult{LockDuration: m.host.Settings(req.Group).Partition.LockDuration}
	if req.Member == "" || req.Group == "" {
		res.Err = fmt.Errorf("%w: a share fetch names its group and member", kerr.InvalidRequest)
		return res
	}
	parts, closing, released, err := m.openSession(req)
	if err != nil {
		res.Err = err
		return res
	}
	now := time.Now()
	byTP := map[TP]*PartitionResult{}
	out := func(tp TP) *PartitionResult {
		r := byTP[tp]
		if r == nil {
			r = &PartitionResult{TP: tp}
			byTP[tp] = r
		}
		return r
	}
	for _, tp := range released {
		m.releaseMember(ctx, tp, req.Group, req.Member)
	}
	acked := false
	for _, pr := range req.Partitions {
		if !pr.HasAcks {
			continue
		}
		acked = true
		r := out(pr.TP)
		r.HadAcks = true
		r.AckErr = m.acknowledge(ctx, req.Group, req.Member, pr, now)
	}
	if closing {
		for _, tp := range parts {
			m.releaseMember(ctx, tp, req.Group, req.Member)
		}
	}
	if !closing && !req.Acknowledge {
		maxBytes := map[TP]int{}
		for _, pr := range req.Partitions {
			maxBytes[pr.TP] = pr.MaxBytes
		}
		got := m.acquireAll(ctx, req, parts, maxBytes, out)
		if !got && !acked && req.Wait > 0 && len(byTP) == 0 {
			m.wait(ctx, req, parts)
			m.acquireAll(ctx, req, parts, maxBytes, out)
		}
	}
	for _, tp := range slices.SortedFunc(maps.Keys(byTP), cmpTP) {
		res.Partitions = append(res.Partitions, *byTP[tp])
	}
	return res
}

func cmpTP(a, b TP) int {
	if c := slices.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

// openSession checks and moves the member's share session: the
// partitions to fetch, whether it closes, and the partitions of a
// session it replaced (whose records the member no longer holds).
func (m *Manager) openSession(req FetchRequest) (parts []TP, closing bool, released []TP, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return nil, false, nil, replication.ErrNotLeader
	}
	k := sessionKey{req.Group, req.Member}
	s := m.mu.sessions[k]
	switch {
	case req.Epoch == OpenEpoch && req.Acknowledge:
		return nil, false, nil, fmt.Errorf("%w: a share acknowledgement cannot open a session", kerr.InvalidShareSessionEpoch)
	case req.Epoch == OpenEpoch:
		for _, pr := range req.Partitions {
			if pr.HasAcks {
				return nil, false, nil, fmt.Errorf("%w: acknowledgements in a request opening a share session", kerr.InvalidRequest)
			}
		}
		if s != nil {
			released = slices.Collect(maps.Keys(s.parts))
		}
		s = &session{epoch: 0, parts: map[TP]bool{}}
		m.mu.sessions[k] = s
	case s == nil:
		return nil, false, nil, fmt.Errorf("%w: member %s of %s", kerr.ShareSessionNotFound, req.Member, req.Group)
	case req.Epoch == CloseEpoch:
		closing = true
		delete(m.mu.sessions, k)
	case req.Epoch != s.epoch:
		return nil, false, nil, fmt.Errorf("%w: epoch %d, session at %d", kerr.InvalidShareSessionEpoch, req.Epoch, s.epoch)
	}
	if !closing {
		s.epoch = max(1, s.epoch+1) // MaxInt32 wraps to 1, as Kafka's
	}
	for _, pr := range req.Partitions {
		s.parts[pr.TP] = true
	}
	for _, tp := range req.Forget {
		delete(s.parts, tp)
	}
	return slices.SortedFunc(maps.Keys(s.parts), cmpTP), closing, released, nil
}

// acknowledge applies one partition's acknowledgements.
func (m *Manager) acknowledge(ctx context.Context, group, member string, pr PartitionRequest, now time.Time) error {
	sp, _, err := m.partition(ctx, partKey{Group: group, TopicID: pr.TopicID, Partition: pr.Partition})
	if err != nil {
		return err
	}
	defer sp.mu.Unlock()
	released := false
	err = m.change(ctx, sp, func(p *share.Partition) error {
		var err error
		released, err = p.Acknowledge(member, pr.Acks, now)
		return err
	})
	if released {
		defer m.waiters.Check(replication.TopicPartition{Topic: sp.topic, Partition: sp.key.Partition})
	}
	switch {
	case errors.Is(err, share.ErrInvalidRecordState):
		return fmt.Errorf("%w: %v", kerr.InvalidRecordState, err)
	case errors.Is(err, share.ErrInvalidRequest):
		return fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	}
	return err
}

// releaseMember releases what member holds of tp.
func (m *Manager) releaseMember(ctx context.Context, tp TP, group, member string) {
	sp, _, err := m.partition(ctx, partKey{Group: group, TopicID: tp.TopicID, Partition: tp.Partition})
	if err != nil {
		return
	}
	released := false
	err = m.change(ctx, sp, func(p *share.Partition) error {
		released = p.ReleaseMember(member)
		return nil
	})
	sp.mu.Unlock()
	if err != nil {
		m.logger.Debug("releasing a member's records", "group", group, "member", member, "err", err)
	}
	if released {
		m.waiters.Check(replication.TopicPartition{Topic: sp.topic, Partition: sp.key.Partition})
	}
}

// acquireAll acquires records of parts for the member, within the
// request's record and byte budgets, and reports whether any were.
func (m *Manager) acquireAll(ctx context.Context, req FetchRequest, parts []TP, maxBytes map[TP]int, out func(TP) *PartitionResult) bool {
	records := req.MaxRecords
	if records <= 0 {
		records = 500
	}
	bytes := req.MaxBytes
	if bytes <= 0 {
		bytes = 50 << 20
	}
	got := false
	for _, tp := range parts {
		if records <= 0 || bytes <= 0 {
			break
		}
		pb := maxBytes[tp]
		if pb <= 0 {
			pb = 1 << 20
		}
		data, acq, err := m.acquire(ctx, req.Group, req.Member, tp, records, min(pb, bytes))
		if err != nil {
			out(tp).Err = err
			continue
		}
		if len(acq) == 0 {
			continue
		}
		got = true
		r := out(tp)
		r.Records, r.Acquired = data, acq
		bytes -= len(data)
		for _, a := range acq {
			records -= int(a.Last - a.First + 1)
		}
	}
	return got
}

// acquire reads tp from its share-partition's fetch offset and acquires
// what it may of it for member.
func (m *Manager) acquire(ctx context.Context, group, member string, tp TP, maxRecords, maxBytes int) ([]byte, []share.AcquiredRecords, error) {
	sp, rep, err := m.partition(ctx, partKey{Group: group, TopicID: tp.TopicID, Partition: tp.Partition})
	if err != nil {
		return nil, nil, err
	}
	defer sp.mu.Unlock()
	set := m.host.Settings(group)
	upper := rep.HighWatermark()
	if set.ReadCommitted {
		upper = rep.LastStableOffset()
	}
	now := time.Now()
	if ls := rep.LogStartOffset(); sp.p.StartOffset() < ls {
		if err := m.change(ctx, sp, func(p *share.Partition) error { p.AdvanceTo(ls); return nil }); err != nil {
			return nil, nil, err
		}
	}
	off := sp.p.FetchOffset()
	if off >= upper {
		return nil, nil, nil
	}
	data, err := rep.Read(off, maxBytes, upper)
	if err != nil {
		if errors.Is(err, storage.ErrOffsetOutOfRange) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	spans, end, err := dataSpans(data, set.ReadCommitted, rep, off)
	if err != nil {
		return nil, nil, err
	}
	var acquired []share.AcquiredRecords
	err = m.change(ctx, sp, func(p *share.Partition) error {
		acquired = p.Acquire(member, spans, maxRecords, now)
		// Control batches and aborted records after the last data are
		// passed once every data record before them was taken.
		if len(spans) == 0 || p.EndOffset() > spans[len(spans)-1].Last {
			p.SkipTo(end)
		}
		return nil
	})
	if err != nil || len(acquired) == 0 {
		return nil, nil, err
	}
	return data, acquired, nil
}

// dataSpans are the offsets of the batches in data a consumer gets: not
// control batches, nor, read_committed, batches of aborted transactions.
// end is the offset after the last batch.
func dataSpans(data []byte, readCommitted bool, rep Replica, from int64) ([]share.Span, int64, error) {
	var spans []share.Span
	var end int64
	var aborted []storage.AbortedTxn
	if readCommitted {
		last := from
		for rest := data; len(rest) > 0; {
			b, r, err := record.Parse(rest)
			if err != nil {
				break
			}
			last, rest = b.LastOffset()+1, r
		}
		var err error
		if aborted, err = rep.AbortedTransactions(from, last); err != nil {
			return nil, 0, err
		}
	}
	// As a read_committed consumer does: an aborted transaction starts
	// counting at its first offset and ends at its producer's marker.
	slices.SortFunc(aborted, func(a, b storage.AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	abortedNow := map[int64]bool{}
	for len(data) > 0 {
		b, rest, err := record.Parse(data)
		if err != nil {
			break
		}
		data = rest
		end = b.LastOffset() + 1
		for len(aborted) > 0 && aborted[0].FirstOffset <= b.LastOffset() {
			abortedNow[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		if b.IsControl() {
			delete(abortedNow, b.ProducerID())
			continue
		}
		if readCommitted && b.IsTransactional() && abortedNow[b.ProducerID()] {
			continue
		}
		spans = append(spans, share.Span{First: b.BaseOffset(), Last: b.LastOffset()})
	}
	return spans, end, nil
}
