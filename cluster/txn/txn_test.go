package txn

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var t0 = time.UnixMilli(1_700_000_000_000)

func meta(state State, pid int64, epoch int16, tps ...TopicPartition) *Metadata {
	m := &Metadata{TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch, LastProducerID: NoProducerID, LastProducerEpoch: NoEpoch,
		Timeout: time.Minute, State: state, Partitions: map[TopicPartition]struct{}{}, LastUpdate: t0}
	for _, tp := range tps {
		m.Partitions[tp] = struct{}{}
	}
	if state == Ongoing {
		m.Start = t0
	}
	return m
}

var tpA, tpB = TopicPartition{"a", 0}, TopicPartition{"b", 1}

func TestInitProducerID(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cur       *Metadata
		pending   bool
		reqPID    int64
		reqEpoch  int16
		newID     int64
		wantErr   error
		wantPID   int64
		wantEpoch int16
		wantState State
		markers   bool
	}{
		{name: "new id needs a producer id", newID: NoProducerID, reqPID: NoProducerID, reqEpoch: NoEpoch, wantErr: ErrNeedProducerID},
		{name: "new id", newID: 7, reqPID: NoProducerID, reqEpoch: NoEpoch, wantPID: 7, wantEpoch: 0, wantState: Empty},
		{name: "bump from Empty", cur: meta(Empty, 7, 3), reqPID: NoProducerID, reqEpoch: NoEpoch, newID: NoProducerID, wantPID: 7, wantEpoch: 4, wantState: Empty},
		{name: "bump from CompleteCommit", cur: meta(CompleteCommit, 7, 3), reqPID: NoProducerID, reqEpoch: NoEpoch, newID: NoProducerID, wantPID: 7, wantEpoch: 4, wantState: Empty},
		{name: "write in flight", cur: meta(Empty, 7, 3), pending: true, reqPID: NoProducerID, reqEpoch: NoEpoch, wantErr: kerr.ConcurrentTransactions},
		{name: "markers being written", cur: meta(PrepareCommit, 7, 3, tpA), reqPID: NoProducerID, reqEpoch: NoEpoch, wantErr: kerr.ConcurrentTransactions},
		{name: "open transaction is fenced and aborted", cur: meta(Ongoing, 7, 3, tpA), reqPID: NoProducerID, reqEpoch: NoEpoch,
			wantErr: kerr.ConcurrentTransactions, wantPID: 7, wantEpoch: 4, wantState: PrepareAbort, markers: true},
		{name: "epoch exhausted rotates the producer id", cur: meta(CompleteAbort, 7, math.MaxInt16-2), reqPID: NoProducerID, reqEpoch: NoEpoch, newID: 9, wantPID: 9, wantEpoch: 0, wantState: Empty},
		{name: "epoch exhausted asks for an id", cur: meta(CompleteAbort, 7, math.MaxInt16-2), reqPID: NoProducerID, reqEpoch: NoEpoch, newID: NoProducerID, wantErr: ErrNeedProducerID},
		{name: "KIP-360 current producer bumps", cur: meta(Empty, 7, 3), reqPID: 7, reqEpoch: 3, newID: NoProducerID, wantPID: 7, wantEpoch: 4, wantState: Empty},
		{name: "KIP-360 other producer is fenced", cur: meta(Empty, 7, 3), reqPID: 5, reqEpoch: 3, wantErr: kerr.ProducerFenced},
		{name: "KIP-360 old epoch is fenced", cur: meta(Empty, 7, 3), reqPID: 7, reqEpoch: 1, wantErr: kerr.ProducerFenced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := InitProducerID(tc.cur, tc.pending, InitRequest{TransactionalID: "tx", Timeout: time.Minute, ProducerID: tc.reqPID, ProducerEpoch: tc.reqEpoch}, tc.newID, t0)
			if !errors.Is(d.Err, tc.wantErr) && d.Err != tc.wantErr {
				t.Fatalf("error %v, want %v", d.Err, tc.wantErr)
			}
			if d.Markers != tc.markers {
				t.Errorf("markers %v, want %v", d.Markers, tc.markers)
			}
			if tc.wantPID == 0 {
				if d.Next != nil {
					t.Errorf("a write of %+v, want none", d.Next)
				}
				return
			}
			if d.Next == nil {
				t.Fatal("no write")
			}
			if d.Next.ProducerID != tc.wantPID || d.Next.ProducerEpoch != tc.wantEpoch || d.Next.State != tc.wantState {
				t.Errorf("next %d/%d %v, want %d/%d %v", d.Next.ProducerID, d.Next.ProducerEpoch, d.Next.State, tc.wantPID, tc.wantEpoch, tc.wantState)
			}
			if tc.cur != nil && d.Next.ProducerEpoch != tc.cur.ProducerEpoch && d.Next.LastProducerEpoch != tc.cur.ProducerEpoch {
				t.Errorf("last epoch %d, want the previous %d", d.Next.LastProducerEpoch, tc.cur.ProducerEpoch)
			}
		})
	}
}

func TestAddPartitionsAndEndTxn(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cur       *Metadata
		pending   bool
		pid       int64
		epoch     int16
		op        string // "add", "commit", "abort"
		wantErr   error
		wantState State // 0 with no error: no write
		write     bool
	}{
		{name: "add to Empty begins", cur: meta(Empty, 7, 3), pid: 7, epoch: 3, op: "add", wantState: Ongoing, write: true},
		{name: "add known partitions writes nothing", cur: meta(Ongoing, 7, 3, tpA, tpB), pid: 7, epoch: 3, op: "add"},
		{name: "add a new partition", cur: meta(Ongoing, 7, 3, tpA), pid: 7, epoch: 3, op: "add", wantState: Ongoing, write: true},
		{name: "add after commit begins again", cur: meta(CompleteCommit, 7, 3), pid: 7, epoch: 3, op: "add", wantState: Ongoing, write: true},
		{name: "add during markers", cur: meta(PrepareCommit, 7, 3, tpA), pid: 7, epoch: 3, op: "add", wantErr: kerr.ConcurrentTransactions},
		{name: "add old epoch", cur: meta(Ongoing, 7, 4, tpA), pid: 7, epoch: 3, op: "add", wantErr: kerr.ProducerFenced},
		{name: "add unknown producer", cur: meta(Ongoing, 7, 3, tpA), pid: 8, epoch: 3, op: "add", wantErr: kerr.InvalidProducerIDMapping},
		{name: "add unknown id", pid: 8, epoch: 3, op: "add", wantErr: kerr.InvalidProducerIDMapping},
		{name: "add while writing", cur: meta(Ongoing, 7, 3, tpA), pending: true, pid: 7, epoch: 3, op: "add", wantErr: kerr.ConcurrentTransactions},
		{name: "commit Ongoing", cur: meta(Ongoing, 7, 3, tpA), pid: 7, epoch: 3, op: "commit", wantState: PrepareCommit, write: true},
		{name: "abort Ongoing", cur: meta(Ongoing, 7, 3, tpA), pid: 7, epoch: 3, op: "abort", wantState: PrepareAbort, write: true},
		{name: "commit retried", cur: meta(CompleteCommit, 7, 3), pid: 7, epoch: 3, op: "commit"},
		{name: "abort retried", cur: meta(CompleteAbort, 7, 3), pid: 7, epoch: 3, op: "abort"},
		{name: "abort after commit", cur: meta(CompleteCommit, 7, 3), pid: 7, epoch: 3, op: "abort", wantErr: kerr.InvalidTxnState},
		{name: "commit retried during markers", cur: meta(PrepareCommit, 7, 3, tpA), pid: 7, epoch: 3, op: "commit", wantErr: kerr.ConcurrentTransactions},
		{name: "commit during abort", cur: meta(PrepareAbort, 7, 3, tpA), pid: 7, epoch: 3, op: "commit", wantErr: kerr.InvalidTxnState},
		{name: "commit without transaction", cur: meta(Empty, 7, 3), pid: 7, epoch: 3, op: "commit", wantErr: kerr.InvalidTxnState},
		{name: "commit fenced", cur: meta(Ongoing, 7, 4, tpA), pid: 7, epoch: 3, op: "commit", wantErr: kerr.ProducerFenced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d Decision
			switch tc.op {
			case "add":
				d = AddPartitions(tc.cur, tc.pending, tc.pid, tc.epoch, []TopicPartition{tpA, tpB}, t0.Add(time.Second))
			default:
				d = EndTxn(tc.cur, tc.pending, tc.pid, tc.epoch, tc.op == "commit", t0.Add(time.Second))
			}
			if !errors.Is(d.Err, tc.wantErr) && d.Err != tc.wantErr {
				t.Fatalf("error %v, want %v", d.Err, tc.wantErr)
			}
			if (d.Next != nil) != tc.write {
				t.Fatalf("write %+v, want a write: %v", d.Next, tc.write)
			}
			if d.Next == nil {
				return
			}
			if d.Next.State != tc.wantState {
				t.Errorf("state %v, want %v", d.Next.State, tc.wantState)
			}
			if tc.op == "add" && !d.Next.HasPartitions([]TopicPartition{tpA, tpB}) {
				t.Errorf("partitions %v, want a and b", d.Next.SortedPartitions())
			}
			if tc.op != "add" && d.Markers != true {
				t.Errorf("a Prepare state without markers")
			}
			if tc.cur.State != Ongoing && tc.op == "add" && !d.Next.Start.Equal(t0.Add(time.Second)) {
				t.Errorf("start %v, want the add's time", d.Next.Start)
			}
		})
	}
}

func TestTimeoutAndComplete(t *testing.T) {
	cur := meta(Ongoing, 7, 3, tpA)
	if next := AbortTimedOut(cur, false, t0.Add(time.Minute)); next != nil {
		t.Fatalf("aborted at exactly the timeout: %+v", next)
	}
	if next := AbortTimedOut(cur, true, t0.Add(2*time.Minute)); next != nil {
		t.Fatal("aborted while a write is in flight")
	}
	next := AbortTimedOut(cur, false, t0.Add(2*time.Minute))
	if next == nil || next.State != PrepareAbort || next.ProducerEpoch != 4 {
		t.Fatalf("timed-out abort %+v, want PrepareAbort with the epoch bumped to fence the producer", next)
	}
	done := Complete(next, t0.Add(3*time.Minute))
	if done.State != CompleteAbort || len(done.Partitions) != 0 || !done.Start.IsZero() {
		t.Errorf("completed %+v, want CompleteAbort without partitions", done)
	}
	if len(next.Partitions) != 1 {
		t.Error("Complete changed its argument")
	}
	if !Expire(done, false, time.Hour, t0.Add(3*time.Minute+time.Hour)) || Expire(cur, false, time.Hour, t0.Add(10*time.Hour)) {
		t.Error("expiration: want finished ids only, after the expiration")
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	m := meta(Ongoing, 7, 3, tpA, tpB, TopicPartition{"a", 2})
	id, got, err := Decode(Key("tx"), Value(m))
	if err != nil {
		t.Fatal(err)
	}
	if id != "tx" || got.ProducerID != 7 || got.ProducerEpoch != 3 || got.State != Ongoing || got.Timeout != time.Minute ||
		!got.Start.Equal(m.Start) || !got.LastUpdate.Equal(m.LastUpdate) || len(got.Partitions) != 3 || !got.HasPartitions(m.SortedPartitions()) {
		t.Errorf("decoded %+v, want %+v", got, m)
	}
	if _, tomb, err := Decode(Key("tx"), nil); err != nil || tomb != nil {
		t.Errorf("tombstone: %v %v", tomb, err)
	}
	if _, _, err := Decode([]byte{0, 1}, nil); err == nil {
		t.Error("a truncated key decoded")
	}
	// Kafka's key layout: version 0 (int16), then the id as a string.
	if k := Key("ab"); string(k) != "\x00\x00\x00\x02ab" {
		t.Errorf("key bytes %q", k)
	}
}

// A producer id rotation survives a reload: the stored value keeps the
// previous producer id (version 1, PreviousProducerId), so the producer's
// retry with its old id and exhausted epoch gets the new id again instead
// of PRODUCER_FENCED.
func TestRotationSurvivesReload(t *testing.T) {
	cur := meta(CompleteAbort, 7, math.MaxInt16-1)
	req := InitRequest{TransactionalID: "tx", Timeout: time.Minute, ProducerID: 7, ProducerEpoch: math.MaxInt16 - 1}
	d := InitProducerID(cur, false, req, 9, t0)
	if d.Err != nil || d.Next == nil || d.Next.ProducerID != 9 || d.Next.ProducerEpoch != 0 {
		t.Fatalf("rotation: %+v", d)
	}
	value := Value(d.Next)
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil || v.Version != 1 || v.PreviousProducerID != 7 || v.NextProducerID != -1 || v.ClientTransactionVersion != 0 {
		t.Fatalf("stored value version %d previous %d next %d: %v", v.Version, v.PreviousProducerID, v.NextProducerID, err)
	}
	_, loaded, err := Decode(Key("tx"), value)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.LastProducerID != 7 {
		t.Fatalf("reloaded previous producer id %d, want 7", loaded.LastProducerID)
	}
	retry := InitProducerID(loaded, false, req, NoProducerID, t0)
	if retry.Err != nil || retry.Next == nil || retry.Next.ProducerID != 9 || retry.Next.ProducerEpoch != 0 {
		t.Fatalf("retry after reload: %+v, want producer 9 epoch 0", retry)
	}
	// Without a previous id the value stays version 0, as Kafka writes it.
	if v0 := Value(meta(Empty, 7, 3)); v0[1] != 0 {
		t.Errorf("value version %d, want 0", v0[1])
	}
}
