package share

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// RecordState is the delivery state of one record of a share-partition.
// The values are those of the persisted state (Kafka's RecordState:
// AVAILABLE 0, ACQUIRED 1, ACKNOWLEDGED 2, ARCHIVED 4).
type RecordState int8

const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	Archived     RecordState = 4
)

func (s RecordState) String() string {
	switch s {
	case Available:
		return "AVAILABLE"
	case Acquired:
		return "ACQUIRED"
	case Acknowledged:
		return "ACKNOWLEDGED"
	case Archived:
		return "ARCHIVED"
	}
	return fmt.Sprintf("RecordState(%d)", int8(s))
}

// terminal states let the start offset move past the record.
func (s RecordState) terminal() bool { return s == Acknowledged || s == Archived }

// AckType is an acknowledgement of ShareFetch and ShareAcknowledge, with
// its wire values (KIP-932; Renew is KIP-1222).
type AckType int8

const (
	// Gap marks an offset the consumer got no record for (compacted, a
	// control record): it is never delivered.
	Gap     AckType = 0
	Accept  AckType = 1
	Release AckType = 2
	Reject  AckType = 3
	// Renew extends the acquisition lock without completing the record.
	Renew AckType = 4
)

// Errors of acknowledgements. The handlers answer ErrInvalidRecordState
// with INVALID_RECORD_STATE and ErrInvalidRequest with INVALID_REQUEST,
// as Kafka's SharePartition does.
var (
	ErrInvalidRecordState = errors.New("share: record not acquired by this member")
	ErrInvalidRequest     = errors.New("share: acknowledgement outside the in-flight records")
)

// Config are the share group settings one partition's state follows
// (Kafka's group.share.* broker keys, or a group's share.* overrides).
type Config struct {
	// LockDuration is how long an acquired record stays locked to its
	// member (group.share.record.lock.duration.ms, 30 s).
	LockDuration time.Duration
	// DeliveryCountLimit is how often a record is delivered before it
	// is archived instead of made available again
	// (group.share.delivery.count.limit, 5).
	DeliveryCountLimit int32
	// MaxRecordLocks bounds the in-flight records, from the start offset
	// to the end of what was acquired
	// (group.share.partition.max.record.locks, 2000).
	MaxRecordLocks int
}

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{LockDuration: 30 * time.Second, DeliveryCountLimit: 5, MaxRecordLocks: 2000}
}

// record is the state of one in-flight offset.
type record struct {
	state         RecordState
	deliveryCount int32
	member        string    // the holder while Acquired
	deadline      time.Time // the lock's end while Acquired
}

// Partition is the delivery state of one share-partition: one topic
// partition as one share group consumes it (Kafka's SharePartition).
// Records below StartOffset are done; records from StartOffset up to
// EndOffset are in flight, each in its own state; records from
// EndOffset on have never been acquired.
//
// Time is passed in; Partition does no I/O and holds no lock, so its
// owner serialises every call.
type Partition struct {
	cfg Config
	// start is the share-partition start offset (SPSO), end one past the
	// last offset ever acquired; inflight[i] is offset start+i.
	start, end int64
	inflight   []record
	// stateEpoch counts resets of the start offset by an operator
	// (AlterShareGroupOffsets, DeleteShareGroupOffsets).
	stateEpoch int32
}

// New starts a share-partition at startOffset, with nothing in flight
// (the offset share.auto.offset.reset chose for a new group).
func New(cfg Config, startOffset int64) *Partition {
	return &Partition{cfg: cfg, start: startOffset, end: startOffset}
}

// StartOffset is the share-partition start offset: every record below
// it was acknowledged or archived.
func (p *Partition) StartOffset() int64 { return p.start }

// EndOffset is one past the last offset ever acquired.
func (p *Partition) EndOffset() int64 { return p.end }

// StateEpoch is the epoch of the persisted state.
func (p *Partition) StateEpoch() int32 { return p.stateEpoch }

// State is the state of offset and its delivery count; offsets outside
// the in-flight records are reported as done (below the start) or as
// never delivered.
func (p *Partition) State(offset int64) (RecordState, int32) {
	switch {
	case offset < p.start:
		return Acknowledged, 0
	case offset >= p.end:
		return Available, 0
	}
	r := p.inflight[offset-p.start]
	return r.state, r.deliveryCount
}

// FetchOffset is where a share fetch reads from: the first available
// in-flight record, else the end of what was acquired (Kafka's
// nextFetchOffset).
func (p *Partition) FetchOffset() int64 {
	for i := range p.inflight {
		if p.inflight[i].state == Available {
			return p.start + int64(i)
		}
	}
	return p.end
}

// Span is a range of offsets [First, Last] a share fetch read from the
// log: one record batch.
type Span struct{ First, Last int64 }

// AcquiredRecords is a range of offsets acquired by one fetch, all
// delivered the same number of times: one AcquiredRecords entry of a
// ShareFetch answer.
type AcquiredRecords struct {
	First, Last   int64
	DeliveryCount int32
}

// Acquire locks up to maxRecords records of spans (the batches read from
// FetchOffset on, in offset order) to member until now + LockDuration,
// and returns them in ranges of equal delivery count. Offsets the log
// skips between spans (removed by compaction) are done as they are
// passed (skip). New records are taken only while the in-flight records
// stay within MaxRecordLocks.
func (p *Partition) Acquire(member string, spans []Span, maxRecords int, now time.Time) []AcquiredRecords {
	var out []AcquiredRecords
	deadline := now.Add(p.cfg.LockDuration)
	taken := 0
	take := func(off int64, r *record) {
		r.state, r.member, r.deadline = Acquired, member, deadline
		r.deliveryCount++
		taken++
		if n := len(out); n > 0 && out[n-1].Last == off-1 && out[n-1].DeliveryCount == r.deliveryCount {
			out[n-1].Last = off
			return
		}
		out = append(out, AcquiredRecords{First: off, Last: off, DeliveryCount: r.deliveryCount})
	}
	for _, s := range spans {
		for off := max(s.First, p.start); off <= s.Last && taken < maxRecords; off++ {
			if off < p.end {
				if r := &p.inflight[off-p.start]; r.state == Available {
					take(off, r)
				}
				continue
			}
			if off > p.end && !p.skip(off) {
				return out
			}
			if p.full(1) {
				return out
			}
			p.inflight = append(p.inflight, record{})
			p.end++
			take(off, &p.inflight[off-p.start])
		}
		if taken >= maxRecords {
			break
		}
	}
	p.advance()
	return out
}

// skip passes the offsets [end, off) the log no longer has (removed by
// compaction): never delivered, so done at once. With nothing in flight
// the start offset jumps; otherwise they are archived in flight, if the
// record locks allow, so a large hole never sizes an allocation.
func (p *Partition) skip(off int64) bool {
	if len(p.inflight) == 0 {
		p.start, p.end = off, off
		return true
	}
	if p.full(off - p.end) {
		return false
	}
	for p.end < off {
		p.inflight = append(p.inflight, record{state: Archived})
		p.end++
	}
	return true
}

// full reports whether n more in-flight records would pass MaxRecordLocks.
func (p *Partition) full(n int64) bool {
	return p.cfg.MaxRecordLocks > 0 && int64(len(p.inflight))+n > int64(p.cfg.MaxRecordLocks)
}

// Ack is one acknowledgement batch: offsets [First, Last] with one type
// for all (len(Types) == 1) or one per offset.
type Ack struct {
	First, Last int64
	Types       []AckType
}

func (a Ack) typeAt(off int64) AckType {
	if len(a.Types) == 1 {
		return a.Types[0]
	}
	return a.Types[off-a.First]
}

// Acknowledge applies member's acknowledgements, all or none: every
// offset must be in flight and acquired by member, or nothing changes.
// Offsets already below the start offset are ignored. It reports
// whether a record became available again (a waiting fetch may take it).
func (p *Partition) Acknowledge(member string, acks []Ack, now time.Time) (released bool, err error) {
	for _, a := range acks {
		if a.Last < a.First || (len(a.Types) != 1 && int64(len(a.Types)) != a.Last-a.First+1) {
			return false, fmt.Errorf("%w: batch [%d, %d] with %d types", ErrInvalidRequest, a.First, a.Last, len(a.Types))
		}
		if a.Last >= p.end {
			return false, fmt.Errorf("%w: offset %d is past the acquired records (end %d)", ErrInvalidRequest, a.Last, p.end)
		}
		for off := max(a.First, p.start); off <= a.Last; off++ {
			r := p.inflight[off-p.start]
			if r.state != Acquired || r.member != member {
				return false, fmt.Errorf("%w: offset %d is %s", ErrInvalidRecordState, off, r.state)
			}
			if t := a.typeAt(off); t < Gap || t > Renew {
				return false, fmt.Errorf("%w: acknowledge type %d", ErrInvalidRequest, t)
			}
		}
	}
	for _, a := range acks {
		for off := max(a.First, p.start); off <= a.Last; off++ {
			r := &p.inflight[off-p.start]
			switch a.typeAt(off) {
			case Accept:
				*r = record{state: Acknowledged, deliveryCount: r.deliveryCount}
			case Gap, Reject:
				*r = record{state: Archived, deliveryCount: r.deliveryCount}
			case Release:
				released = p.release(r) || released
			case Renew:
				r.deadline = now.Add(p.cfg.LockDuration)
			}
		}
	}
	p.advance()
	return released, nil
}

// release ends an acquisition without completing the record: available
// for another delivery, or archived once delivered DeliveryCountLimit
// times.
func (p *Partition) release(r *record) bool {
	if p.cfg.DeliveryCountLimit > 0 && r.deliveryCount >= p.cfg.DeliveryCountLimit {
		*r = record{state: Archived, deliveryCount: r.deliveryCount}
		return false
	}
	*r = record{state: Available, deliveryCount: r.deliveryCount}
	return true
}

// ExpireLocks releases the records whose acquisition lock ended at or
// before now. It reports whether one became available, and the earliest
// lock still held (zero when none), for the owner's timer.
func (p *Partition) ExpireLocks(now time.Time) (released bool, next time.Time) {
	for i := range p.inflight {
		r := &p.inflight[i]
		if r.state != Acquired {
			continue
		}
		if !r.deadline.After(now) {
			released = p.release(r) || released
			continue
		}
		if next.IsZero() || r.deadline.Before(next) {
			next = r.deadline
		}
	}
	p.advance()
	return released, next
}

// ReleaseMember releases every record member holds: it left the group,
// was fenced, or closed its share session.
func (p *Partition) ReleaseMember(member string) (released bool) {
	for i := range p.inflight {
		if r := &p.inflight[i]; r.state == Acquired && r.member == member {
			released = p.release(r) || released
		}
	}
	p.advance()
	return released
}

// AdvanceTo moves the start offset up to logStartOffset when the log no
// longer has the records below it (retention, DeleteRecords): they are
// never delivered again, whatever their state.
func (p *Partition) AdvanceTo(logStartOffset int64) {
	if logStartOffset <= p.start {
		return
	}
	if logStartOffset >= p.end {
		p.start, p.end, p.inflight = logStartOffset, logStartOffset, p.inflight[:0]
		return
	}
	p.inflight = append(p.inflight[:0], p.inflight[logStartOffset-p.start:]...)
	p.start = logStartOffset
	p.advance()
}

// Reset starts the partition over at startOffset with nothing in flight
// and a new state epoch: an operator's AlterShareGroupOffsets, allowed
// only while the group has no members.
func (p *Partition) Reset(startOffset int64) {
	p.start, p.end, p.inflight = startOffset, startOffset, nil
	p.stateEpoch++
}

// advance moves the start offset past the completed records at the head
// of the in-flight ones.
func (p *Partition) advance() {
	n := 0
	for n < len(p.inflight) && p.inflight[n].state.terminal() {
		n++
	}
	if n == 0 {
		return
	}
	p.start += int64(n)
	p.inflight = append(p.inflight[:0], p.inflight[n:]...)
}

// maxRestored bounds the in-flight records of a restored state: the
// largest group.share.partition.max.record.locks Kafka accepts, so a
// state written under a higher setting than today's still restores, and
// a corrupt one never sizes a large allocation.
const maxRestored = 10000

// StateBatch is a run of in-flight offsets with one persisted state and
// delivery count (Kafka's PersisterStateBatch). Acquired records persist
// as Available: an acquisition lock does not survive the coordinator or
// the leader, but the delivery count does.
type StateBatch struct {
	First, Last   int64
	State         RecordState
	DeliveryCount int32
}

// Snapshot is the state that is persisted for a share-partition (the
// share coordinator's ShareSnapshot): enough to rebuild it after the
// partition leader moves.
type Snapshot struct {
	StateEpoch  int32
	StartOffset int64
	Batches     []StateBatch
}

// Snapshot returns the persisted state of p.
func (p *Partition) Snapshot() Snapshot {
	s := Snapshot{StateEpoch: p.stateEpoch, StartOffset: p.start}
	for i, r := range p.inflight {
		st := r.state
		if st == Acquired {
			st = Available
		}
		off := p.start + int64(i)
		if n := len(s.Batches); n > 0 && s.Batches[n-1].Last == off-1 &&
			s.Batches[n-1].State == st && s.Batches[n-1].DeliveryCount == r.deliveryCount {
			s.Batches[n-1].Last = off
			continue
		}
		s.Batches = append(s.Batches, StateBatch{First: off, Last: off, State: st, DeliveryCount: r.deliveryCount})
	}
	return s
}

// Restore rebuilds a share-partition from its persisted state. The
// batches must be in offset order, at or above the start offset, and
// span at most maxRestored offsets; a state that does not is refused (it
// was not written by Snapshot), never partly applied.
func Restore(cfg Config, s Snapshot) (*Partition, error) {
	p := New(cfg, s.StartOffset)
	p.stateEpoch = s.StateEpoch
	for _, b := range s.Batches {
		switch {
		case b.First < p.end || b.Last < b.First:
			return nil, fmt.Errorf("share: state batch [%d, %d] out of order (in flight from %d to %d)", b.First, b.Last, p.start, p.end)
		case b.State != Available && b.State != Acknowledged && b.State != Archived:
			return nil, fmt.Errorf("share: state batch [%d, %d] in state %s", b.First, b.Last, b.State)
		case b.DeliveryCount < 0:
			return nil, fmt.Errorf("share: state batch [%d, %d] with delivery count %d", b.First, b.Last, b.DeliveryCount)
		}
		// Offsets between batches were never delivered: available.
		if b.Last-p.start >= maxRestored {
			return nil, fmt.Errorf("share: state batches reach offset %d, more than %d records past the start offset %d", b.Last, maxRestored, p.start)
		}
		for p.end < b.First {
			p.inflight = append(p.inflight, record{})
			p.end++
		}
		for ; p.end <= b.Last; p.end++ {
			p.inflight = append(p.inflight, record{state: b.State, deliveryCount: b.DeliveryCount})
		}
	}
	p.advance()
	return p, nil
}

// Clone is an independent copy of p: its owner keeps it to roll p back
// when the state p moved to could not be persisted.
func (p *Partition) Clone() *Partition {
	q := *p
	q.inflight = slices.Clone(p.inflight)
	return &q
}

// SkipTo passes the offsets from EndOffset up to off that the log holds
// but no consumer is given (control batches, aborted transactions):
// never delivered, so done at once, as the offsets compaction removed.
// It reports false when the record locks do not allow it yet.
func (p *Partition) SkipTo(off int64) bool {
	if off <= p.end {
		return true
	}
	if !p.skip(off) {
		return false
	}
	p.advance()
	return true
}
