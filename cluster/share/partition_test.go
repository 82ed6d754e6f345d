package share

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

var t0 = time.Unix(1000, 0)

func testConfig() Config {
	return Config{LockDuration: 30 * time.Second, DeliveryCountLimit: 3, MaxRecordLocks: 10}
}

func states(p *Partition, from, to int64) []RecordState {
	var out []RecordState
	for off := from; off <= to; off++ {
		s, _ := p.State(off)
		out = append(out, s)
	}
	return out
}

func TestAcquireNewRecords(t *testing.T) {
	p := New(testConfig(), 100)
	got := p.Acquire("m1", []Span{{100, 104}, {105, 107}}, 6, t0)
	if want := []AcquiredRecords{{100, 105, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	if p.EndOffset() != 106 || p.FetchOffset() != 106 {
		t.Fatalf("end %d fetch offset %d, want 106 and 106", p.EndOffset(), p.FetchOffset())
	}
	// A second member gets what remains, never what m1 holds.
	got = p.Acquire("m2", []Span{{100, 104}, {105, 107}}, 100, t0)
	if want := []AcquiredRecords{{106, 107, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("second member acquired %v, want %v", got, want)
	}
}

func TestAcknowledgeMovesStartOffset(t *testing.T) {
	for _, tc := range []struct {
		name      string
		acks      []Ack
		start     int64
		states    []RecordState // 100..104 after the acks
		wantFetch int64
	}{
		{"accept all", []Ack{{100, 104, []AckType{Accept}}}, 105, nil, 105},
		{"accept the head", []Ack{{100, 101, []AckType{Accept}}}, 102, []RecordState{Acknowledged, Acknowledged, Acquired, Acquired, Acquired}, 105},
		{"accept the tail", []Ack{{103, 104, []AckType{Accept}}}, 100, []RecordState{Acquired, Acquired, Acquired, Acknowledged, Acknowledged}, 105},
		{"release one", []Ack{{100, 104, []AckType{Accept, Release, Accept, Reject, Gap}}}, 101, []RecordState{Acknowledged, Available, Acknowledged, Archived, Archived}, 101},
		{"two batches", []Ack{{100, 101, []AckType{Reject}}, {102, 104, []AckType{Accept}}}, 105, nil, 105},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(testConfig(), 100)
			p.Acquire("m1", []Span{{100, 104}}, 10, t0)
			if _, err := p.Acknowledge("m1", tc.acks, t0); err != nil {
				t.Fatal(err)
			}
			if p.StartOffset() != tc.start {
				t.Errorf("start offset %d, want %d", p.StartOffset(), tc.start)
			}
			if tc.states != nil {
				if got := states(p, 100, 104); !reflect.DeepEqual(got, tc.states) {
					t.Errorf("states %v, want %v", got, tc.states)
				}
			}
			if p.FetchOffset() != tc.wantFetch {
				t.Errorf("fetch offset %d, want %d", p.FetchOffset(), tc.wantFetch)
			}
		})
	}
}

// Acknowledgements are all or none: one bad offset refuses the whole
// request and changes nothing, as Kafka's INVALID_RECORD_STATE does.
func TestAcknowledgeRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		acks []Ack
		want error
	}{
		{"another member's record", []Ack{{105, 105, []AckType{Accept}}}, ErrInvalidRecordState},
		{"one good, one not", []Ack{{100, 101, []AckType{Accept}}, {104, 106, []AckType{Accept}}}, ErrInvalidRecordState},
		{"already acknowledged", []Ack{{102, 102, []AckType{Accept}}}, ErrInvalidRecordState},
		{"never acquired", []Ack{{108, 108, []AckType{Accept}}}, ErrInvalidRequest},
		{"types do not match the range", []Ack{{100, 102, []AckType{Accept, Accept}}}, ErrInvalidRequest},
		{"unknown type", []Ack{{100, 100, []AckType{9}}}, ErrInvalidRequest},
		{"reversed range", []Ack{{101, 100, []AckType{Accept}}}, ErrInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(testConfig(), 100)
			p.Acquire("m1", []Span{{100, 104}}, 10, t0)
			p.Acquire("m2", []Span{{105, 107}}, 10, t0)
			// 102 is done but cannot move the start while 100 is held.
			if _, err := p.Acknowledge("m1", []Ack{{102, 102, []AckType{Accept}}}, t0); err != nil {
				t.Fatal(err)
			}
			before := p.Snapshot()
			_, err := p.Acknowledge("m1", tc.acks, t0)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if after := p.Snapshot(); !reflect.DeepEqual(before, after) {
				t.Fatalf("a refused acknowledgement changed the state: %+v, then %+v", before, after)
			}
		})
	}
}

// A record released or expired once too often is archived, never
// delivered a (limit+1)th time.
func TestDeliveryCountLimit(t *testing.T) {
	p := New(testConfig(), 0) // limit 3
	now := t0
	for delivery := int32(1); delivery <= 3; delivery++ {
		got := p.Acquire("m1", []Span{{0, 0}}, 10, now)
		if want := []AcquiredRecords{{0, 0, delivery}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("delivery %d: acquired %v, want %v", delivery, got, want)
		}
		if delivery%2 == 1 {
			now = now.Add(31 * time.Second)
			p.ExpireLocks(now) // the lock runs out
		} else if _, err := p.Acknowledge("m1", []Ack{{0, 0, []AckType{Release}}}, now); err != nil {
			t.Fatal(err)
		}
	}
	if s, n := p.State(0); s != Acknowledged || p.StartOffset() != 1 {
		t.Fatalf("after 3 deliveries offset 0 is %s (count %d), start %d: want it archived and passed", s, n, p.StartOffset())
	}
	if got := p.Acquire("m1", []Span{{0, 0}}, 10, now); len(got) != 0 {
		t.Fatalf("a fourth delivery: %v", got)
	}
}

func TestExpireLocks(t *testing.T) {
	p := New(testConfig(), 0)
	p.Acquire("m1", []Span{{0, 1}}, 10, t0)
	p.Acquire("m2", []Span{{2, 3}}, 10, t0.Add(10*time.Second))
	released, next := p.ExpireLocks(t0.Add(29 * time.Second))
	if released || !next.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("before any lock ends: released %v, next %v", released, next)
	}
	released, next = p.ExpireLocks(t0.Add(30 * time.Second))
	if !released || !next.Equal(t0.Add(40*time.Second)) {
		t.Fatalf("m1's locks end: released %v, next %v", released, next)
	}
	if got := states(p, 0, 3); !reflect.DeepEqual(got, []RecordState{Available, Available, Acquired, Acquired}) {
		t.Fatalf("states %v", got)
	}
	// m1's late acknowledgement is refused: its lock is gone.
	if _, err := p.Acknowledge("m1", []Ack{{0, 1, []AckType{Accept}}}, t0.Add(31*time.Second)); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("acknowledging an expired lock: %v", err)
	}
	// Renew keeps m2's lock past its first deadline.
	if _, err := p.Acknowledge("m2", []Ack{{2, 3, []AckType{Renew}}}, t0.Add(35*time.Second)); err != nil {
		t.Fatal(err)
	}
	if released, _ := p.ExpireLocks(t0.Add(41 * time.Second)); released {
		t.Fatal("a renewed lock expired at its old deadline")
	}
}

func TestReleaseMember(t *testing.T) {
	p := New(testConfig(), 0)
	p.Acquire("m1", []Span{{0, 1}}, 10, t0)
	p.Acquire("m2", []Span{{2, 2}}, 10, t0)
	if !p.ReleaseMember("m1") {
		t.Fatal("nothing released")
	}
	if got := states(p, 0, 2); !reflect.DeepEqual(got, []RecordState{Available, Available, Acquired}) {
		t.Fatalf("states %v", got)
	}
	if p.FetchOffset() != 0 {
		t.Fatalf("fetch offset %d, want 0", p.FetchOffset())
	}
	// Redelivered, with its count.
	if got := p.Acquire("m2", []Span{{0, 2}}, 10, t0); !reflect.DeepEqual(got, []AcquiredRecords{{0, 1, 2}}) {
		t.Fatalf("redelivery %v", got)
	}
}

// The in-flight records are bounded by MaxRecordLocks; records released
// inside the window are still delivered when it is full.
func TestMaxRecordLocks(t *testing.T) {
	p := New(testConfig(), 0) // 10 locks
	got := p.Acquire("m1", []Span{{0, 19}}, 100, t0)
	if !reflect.DeepEqual(got, []AcquiredRecords{{0, 9, 1}}) {
		t.Fatalf("acquired %v, want the first 10", got)
	}
	if got := p.Acquire("m2", []Span{{10, 19}}, 100, t0); len(got) != 0 {
		t.Fatalf("acquired past the locks: %v", got)
	}
	if _, err := p.Acknowledge("m1", []Ack{{5, 5, []AckType{Release}}}, t0); err != nil {
		t.Fatal(err)
	}
	if got := p.Acquire("m2", []Span{{5, 19}}, 100, t0); !reflect.DeepEqual(got, []AcquiredRecords{{5, 5, 2}}) {
		t.Fatalf("re-acquired %v, want offset 5 only", got)
	}
	if _, err := p.Acknowledge("m1", []Ack{{0, 4, []AckType{Accept}}}, t0); err != nil {
		t.Fatal(err)
	}
	if got := p.Acquire("m2", []Span{{10, 19}}, 100, t0); !reflect.DeepEqual(got, []AcquiredRecords{{10, 14, 1}}) {
		t.Fatalf("after the head completed: %v, want 10-14", got)
	}
}

// Offsets the log skips (compaction) are never delivered: passed at once
// with nothing in flight, archived in flight otherwise, and never more
// than the record locks allow.
func TestLogGaps(t *testing.T) {
	p := New(testConfig(), 0)
	if got := p.Acquire("m1", []Span{{1000, 1001}}, 10, t0); !reflect.DeepEqual(got, []AcquiredRecords{{1000, 1001, 1}}) || p.StartOffset() != 1000 {
		t.Fatalf("acquired %v, start %d", got, p.StartOffset())
	}
	got := p.Acquire("m1", []Span{{1005, 1005}, {1_000_000, 1_000_001}}, 10, t0)
	if !reflect.DeepEqual(got, []AcquiredRecords{{1005, 1005, 1}}) {
		t.Fatalf("acquired %v: want 1005, and nothing past a hole larger than the locks", got)
	}
	if s, _ := p.State(1003); s != Archived {
		t.Fatalf("offset 1003 (not in the log) is %s", s)
	}
	if _, err := p.Acknowledge("m1", []Ack{{1000, 1001, []AckType{Accept}}, {1005, 1005, []AckType{Accept}}}, t0); err != nil {
		t.Fatal(err)
	}
	if p.StartOffset() != 1006 {
		t.Fatalf("start %d, want 1006", p.StartOffset())
	}
	if got := p.Acquire("m1", []Span{{1_000_000, 1_000_001}}, 10, t0); !reflect.DeepEqual(got, []AcquiredRecords{{1_000_000, 1_000_001, 1}}) {
		t.Fatalf("after the window drained: %v", got)
	}
}

func TestAdvanceToAndReset(t *testing.T) {
	p := New(testConfig(), 0)
	p.Acquire("m1", []Span{{0, 5}}, 10, t0)
	p.AdvanceTo(3) // retention removed 0-2
	if p.StartOffset() != 3 || p.FetchOffset() != 6 {
		t.Fatalf("start %d fetch %d", p.StartOffset(), p.FetchOffset())
	}
	if _, err := p.Acknowledge("m1", []Ack{{0, 5, []AckType{Accept}}}, t0); err != nil {
		t.Fatalf("acknowledging records partly below the start offset: %v", err)
	}
	p.AdvanceTo(50)
	if p.StartOffset() != 50 || p.EndOffset() != 50 {
		t.Fatalf("start %d end %d", p.StartOffset(), p.EndOffset())
	}
	p.Reset(7)
	if p.StartOffset() != 7 || p.StateEpoch() != 1 || p.FetchOffset() != 7 {
		t.Fatalf("after reset: start %d epoch %d fetch %d", p.StartOffset(), p.StateEpoch(), p.FetchOffset())
	}
}

func TestSnapshotRestore(t *testing.T) {
	p := New(testConfig(), 0)
	p.Acquire("m1", []Span{{0, 7}}, 10, t0)
	if _, err := p.Acknowledge("m1", []Ack{{1, 7, []AckType{Accept, Accept, Release, Reject, Accept, Release, Release}}}, t0); err != nil {
		t.Fatal(err)
	}
	s := p.Snapshot()
	want := Snapshot{StartOffset: 0, Batches: []StateBatch{
		{0, 0, Available, 1}, // acquired: persisted as available
		{1, 2, Acknowledged, 1},
		{3, 3, Available, 1},
		{4, 4, Archived, 1},
		{5, 5, Acknowledged, 1},
		{6, 7, Available, 1},
	}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("snapshot %+v\nwant     %+v", s, want)
	}
	q, err := Restore(testConfig(), s)
	if err != nil {
		t.Fatal(err)
	}
	if q.FetchOffset() != 0 || q.EndOffset() != 8 {
		t.Fatalf("restored fetch %d end %d", q.FetchOffset(), q.EndOffset())
	}
	// The restored partition redelivers 0, 3, 6, 7 with their counts.
	got := q.Acquire("m2", []Span{{0, 9}}, 100, t0)
	if w := []AcquiredRecords{{0, 0, 2}, {3, 3, 2}, {6, 7, 2}, {8, 9, 1}}; !reflect.DeepEqual(got, w) {
		t.Fatalf("after restore acquired %v, want %v", got, w)
	}

	for _, bad := range []Snapshot{
		{StartOffset: 10, Batches: []StateBatch{{5, 6, Available, 1}}},
		{StartOffset: 0, Batches: []StateBatch{{3, 4, Available, 1}, {2, 2, Archived, 1}}},
		{StartOffset: 0, Batches: []StateBatch{{0, 0, Acquired, 1}}},
		{StartOffset: 0, Batches: []StateBatch{{0, 1 << 40, Available, 1}}},
		{StartOffset: 0, Batches: []StateBatch{{0, 0, Available, -1}}},
	} {
		if _, err := Restore(testConfig(), bad); err == nil {
			t.Errorf("restored %+v", bad)
		}
	}
}
