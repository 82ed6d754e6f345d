package storage

import (
	"slices"
	"testing"
)

// ActiveProducers follows each producer through batches and markers, and
// keeps that view across a reopen (from the producer snapshot and the
// replayed tail).
func TestActiveProducers(t *testing.T) {
	dir := t.TempDir()
	l := openTxnLog(t, dir, txnConfig(), nil, false)
	mustAppend(t, l, plain(2))         // 0-1: no producer
	mustAppend(t, l, idem(7, 0, 0, 3)) // 2-4: idempotent
	appendTxn(t, l, 9, 1, 0, 2)        // 5-6: transaction from 5
	mustAppend(t, l, idem(7, 0, 3, 1)) // 7
	appendTxn(t, l, 9, 1, 2, 1)        // 8: same transaction
	openTxn := ActiveProducer{ProducerID: 9, ProducerEpoch: 1, LastSequence: 2, LastTimestamp: testNow,
		CoordinatorEpoch: -1, CurrentTxnStartOffset: 5}
	idemProducer := ActiveProducer{ProducerID: 7, ProducerEpoch: 0, LastSequence: 3, LastTimestamp: testNow,
		CoordinatorEpoch: -1, CurrentTxnStartOffset: -1}
	if got, want := l.ActiveProducers(), []ActiveProducer{idemProducer, openTxn}; !slices.Equal(got, want) {
		t.Fatalf("open transaction:\n got %+v\nwant %+v", got, want)
	}

	if _, err := l.AppendControl(9, 1, 4, true, 0); err != nil { // 9: commit marker
		t.Fatal(err)
	}
	committed := openTxn
	committed.CoordinatorEpoch, committed.CurrentTxnStartOffset = 4, -1
	want := []ActiveProducer{idemProducer, committed}
	if got := l.ActiveProducers(); !slices.Equal(got, want) {
		t.Fatalf("after the commit marker:\n got %+v\nwant %+v", got, want)
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTxnLog(t, dir, txnConfig(), nil, false)
	defer l.Close()
	if got := l.ActiveProducers(); !slices.Equal(got, want) {
		t.Fatalf("after reopening:\n got %+v\nwant %+v", got, want)
	}
}
