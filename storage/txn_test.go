package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/kbroker/kbroker/storage/cleaner"
	"github.com/kbroker/kbroker/storage/logfs"
	"github.com/kbroker/kbroker/storage/producerstate"
	"github.com/kbroker/kbroker/wire/record"
)

// txnBatch is a transactional client batch of n records.
func txnBatch(pid int64, epoch int16, seq int32, n int) record.Batch {
	b := makeBatch(idem(pid, epoch, seq, n))
	binary.BigEndian.PutUint16(b[21:], uint16(record.TransactionalFlag))
	b.SetCRC()
	return b
}

func appendTxn(t testing.TB, l *Log, pid int64, epoch int16, seq int32, n int) AppendResult {
	t.Helper()
	res, err := l.AppendAsLeader(txnBatch(pid, epoch, seq, n), AppendOptions{LogAppendTimeMs: -1})
	if err != nil {
		t.Fatalf("transactional append pid %d seq %d: %v", pid, seq, err)
	}
	return res
}

func endTxn(t testing.TB, l *Log, pid int64, epoch int16, commit bool) int64 {
	t.Helper()
	res, err := l.AppendControl(pid, epoch, 0, commit, 0)
	if err != nil {
		t.Fatalf("marker pid %d commit %v: %v", pid, commit, err)
	}
	if res.FirstOffset != res.LastOffset {
		t.Fatalf("marker spans [%d, %d]", res.FirstOffset, res.LastOffset)
	}
	return res.FirstOffset
}

func openTxnLog(t testing.TB, dir string, cfg LogConfig, fsys FS, clean bool) *Log {
	t.Helper()
	l, err := OpenLog(dir, cfg, LogOptions{FS: fsys, Clean: clean})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// txnConfig rolls segments often, so that transactions span them.
func txnConfig() LogConfig {
	cfg := smallConfig()
	cfg.SegmentBytes = 2048
	return cfg
}

func TestTxnLastStableOffset(t *testing.T) {
	const a, b = 1000, 2000
	type step struct {
		do      func(t *testing.T, l *Log)
		hw      int64 // -1: the log end offset
		wantLSO int64
		wantFUO int64 // -1: none
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"commit makes the transaction stable", []step{
			{func(t *testing.T, l *Log) { mustAppend(t, l, plain(2)) }, -1, 2, -1},
			{func(t *testing.T, l *Log) { appendTxn(t, l, a, 0, 0, 3) }, -1, 2, 2},
			{func(t *testing.T, l *Log) { appendTxn(t, l, a, 0, 3, 3) }, -1, 2, 2},
			{func(t *testing.T, l *Log) { endTxn(t, l, a, 0, true) }, -1, 9, -1},
		}},
		{"the marker must be below the high watermark", []step{
			{func(t *testing.T, l *Log) { appendTxn(t, l, a, 0, 0, 3) }, 3, 0, 0},
			{func(t *testing.T, l *Log) { endTxn(t, l, a, 0, true) }, 3, 0, 0}, // marker at 3, HW 3
			{func(t *testing.T, l *Log) {}, 4, 4, -1},
		}},
		{"two interleaved producers", []step{
			{func(t *testing.T, l *Log) { appendTxn(t, l, a, 0, 0, 2) }, -1, 0, 0},
			{func(t *testing.T, l *Log) { appendTxn(t, l, b, 0, 0, 2) }, -1, 0, 0},
			{func(t *testing.T, l *Log) { appendTxn(t, l, a, 0, 2, 2) }, -1, 0, 0},
			{func(t *testing.T, l *Log) { endTxn(t, l, a, 0, true) }, -1, 2, 2},
			{func(t *testing.T, l *Log) { appendTxn(t, l, a, 0, 4, 1) }, -1, 2, 2}, // a's next transaction at 7
			{func(t *testing.T, l *Log) { endTxn(t, l, b, 0, false) }, -1, 7, 7},
			{func(t *testing.T, l *Log) { endTxn(t, l, a, 0, true) }, -1, 10, -1},
		}},
		{"a marker without a transaction changes nothing", []step{
			{func(t *testing.T, l *Log) { endTxn(t, l, a, 0, false) }, -1, 1, -1},
			{func(t *testing.T, l *Log) { appendTxn(t, l, a, 0, 0, 1) }, -1, 1, 1},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := openTxnLog(t, t.TempDir(), txnConfig(), nil, true)
			defer l.Close()
			for i, st := range tc.steps {
				st.do(t, l)
				hw := st.hw
				if hw < 0 {
					hw = l.LogEndOffset()
				}
				l.SetHighWatermarkCheckpoint(hw)
				if got := l.LastStableOffset(hw); got != st.wantLSO {
					t.Fatalf("step %d: LSO %d, want %d", i, got, st.wantLSO)
				}
				fuo, ok := l.FirstUnstableOffset()
				if (st.wantFUO < 0 && ok) || (st.wantFUO >= 0 && (!ok || fuo != st.wantFUO)) {
					t.Fatalf("step %d: first unstable offset %d %v, want %d", i, fuo, ok, st.wantFUO)
				}
			}
		})
	}
}

// TestTxnLastStableOffsetNeverAboveHighWatermark drives random producers
// and checks LSO <= HW and LSO <= every ongoing transaction's first offset.
func TestTxnLastStableOffsetNeverAboveHighWatermark(t *testing.T) {
	l := openTxnLog(t, t.TempDir(), txnConfig(), nil, true)
	defer l.Close()
	rng := rand.New(rand.NewSource(1))
	type prod struct {
		seq   int32
		first int64 // -1: none
	}
	prods := map[int64]*prod{1: {first: -1}, 2: {first: -1}, 3: {first: -1}}
	for i := 0; i < 300; i++ {
		pid := int64(rng.Intn(3) + 1)
		p := prods[pid]
		if p.first >= 0 && rng.Intn(3) == 0 {
			endTxn(t, l, pid, 0, rng.Intn(2) == 0)
			p.first = -1
		} else {
			res := appendTxn(t, l, pid, 0, p.seq, 1+rng.Intn(3))
			p.seq += int32(res.LastOffset - res.FirstOffset + 1)
			if p.first < 0 {
				p.first = res.FirstOffset
			}
		}
		hw := rng.Int63n(l.LogEndOffset() + 1)
		lso := l.LastStableOffset(hw)
		if lso > hw {
			t.Fatalf("LSO %d above HW %d", lso, hw)
		}
		for pid, p := range prods {
			if p.first >= 0 && lso > p.first {
				t.Fatalf("LSO %d past producer %d's ongoing transaction at %d", lso, pid, p.first)
			}
		}
	}
}

func TestTxnAbortIndex(t *testing.T) {
	dir := t.TempDir()
	l := openTxnLog(t, dir, txnConfig(), nil, true)
	defer l.Close()
	mustAppend(t, l, plain(1))         // 0
	appendTxn(t, l, 7, 0, 0, 2)        // 1-2
	appendTxn(t, l, 8, 0, 0, 1)        // 3 (ongoing while 7 aborts)
	appendTxn(t, l, 7, 0, 2, 2)        // 4-5
	abort := endTxn(t, l, 7, 0, false) // 6
	commit := endTxn(t, l, 8, 0, true) // 7
	if abort != 6 || commit != 7 {
		t.Fatalf("markers at %d, %d", abort, commit)
	}
	got, err := l.AbortedTransactions(0, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if want := []AbortedTxn{{ProducerID: 7, FirstOffset: 1, LastOffset: 6}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
	// The file is Kafka's format: the LSO recorded is producer 8's
	// ongoing transaction.
	data, err := os.ReadFile(filepath.Join(dir, "00000000000000000000.txnindex"))
	if err != nil {
		t.Fatal(err)
	}
	want := binary.BigEndian.AppendUint16(nil, 0)
	for _, v := range []int64{7, 1, 6, 3} {
		want = binary.BigEndian.AppendUint64(want, uint64(v))
	}
	if !bytes.Equal(data, want) {
		t.Fatalf(".txnindex %x, want %x", data, want)
	}
	for _, tc := range []struct {
		from, to int64
		n        int
	}{{0, 1, 0}, {0, 2, 1}, {5, 6, 1}, {6, 7, 1}, {7, 8, 0}, {3, 4, 1}} {
		got, _ := l.AbortedTransactions(tc.from, tc.to)
		if len(got) != tc.n {
			t.Errorf("AbortedTransactions(%d, %d) = %+v, want %d", tc.from, tc.to, got, tc.n)
		}
	}
	// A control batch reads back as Kafka writes it.
	batches := readAll(t, l)
	mk := batches[len(batches)-2]
	m, ok, err := record.ParseControl(mk)
	if err != nil || !ok || m.Type != record.ControlAbort || !mk.IsTransactional() || !mk.IsControl() ||
		mk.ProducerID() != 7 || mk.BaseSequence() != record.NoSequence {
		t.Fatalf("marker batch: %+v %v %v attrs %x", m, ok, err, mk.Attributes())
	}
}

func TestTxnRefusals(t *testing.T) {
	tests := []struct {
		name string
		do   func(l *Log) error
		want error
	}{
		{"data with an older epoch", func(l *Log) error {
			_, err := l.AppendAsLeader(txnBatch(1, 4, 3, 1), AppendOptions{LogAppendTimeMs: -1})
			return err
		}, ErrInvalidProducerEpoch},
		{"marker with an older epoch", func(l *Log) error {
			_, err := l.AppendControl(1, 4, 0, false, 0)
			return err
		}, ErrInvalidProducerEpoch},
		{"marker from an older coordinator", func(l *Log) error {
			if _, err := l.AppendControl(1, 5, 3, false, 0); err != nil {
				return err
			}
			_, err := l.AppendControl(1, 5, 2, false, 0)
			return err
		}, ErrTransactionCoordinatorFenced},
		{"non-transactional batch in a transaction", func(l *Log) error {
			_, err := l.AppendAsLeader(makeBatch(idem(1, 5, 3, 1)), AppendOptions{LogAppendTimeMs: -1})
			return err
		}, ErrInvalidTxnState},
		{"control batch from a client", func(l *Log) error {
			b, err := record.BuildEndTxnMarker(record.MarkerSpec{ProducerID: 1, ProducerEpoch: 5},
				record.EndTxnMarker{Type: record.ControlCommit})
			if err != nil {
				return err
			}
			_, err = l.AppendAsLeader(b, AppendOptions{LogAppendTimeMs: -1})
			return err
		}, ErrInvalidRecord},
		{"marker bumps the epoch", func(l *Log) error {
			if _, err := l.AppendControl(1, 6, 0, false, 0); err != nil {
				return err
			}
			if _, err := l.AppendAsLeader(txnBatch(1, 6, 0, 1), AppendOptions{LogAppendTimeMs: -1}); err != nil {
				return fmt.Errorf("new epoch from sequence 0: %w", err)
			}
			_, err := l.AppendAsLeader(txnBatch(1, 5, 4, 1), AppendOptions{LogAppendTimeMs: -1})
			return err
		}, ErrInvalidProducerEpoch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := openTxnLog(t, t.TempDir(), txnConfig(), nil, true)
			defer l.Close()
			appendTxn(t, l, 1, 5, 0, 3)
			leo := l.LogEndOffset()
			err := tc.do(l)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if tc.name != "marker from an older coordinator" && tc.name != "marker bumps the epoch" && l.LogEndOffset() != leo {
				t.Fatalf("refused append moved the log end offset %d -> %d", leo, l.LogEndOffset())
			}
		})
	}
}

// txnScenario writes an aborted, a committed and an ongoing transaction
// over several segments and returns the ongoing one's first offset.
func txnScenario(t testing.TB, l *Log) int64 {
	t.Helper()
	seqs := map[int64]int32{}
	app := func(pid int64, n int) AppendResult {
		res := appendTxn(t, l, pid, 0, seqs[pid], n)
		seqs[pid] += int32(n)
		return res
	}
	for i := 0; i < 10; i++ {
		app(1, 5)
		app(2, 5)
		mustAppend(t, l, plain(5))
	}
	endTxn(t, l, 1, 0, false)
	endTxn(t, l, 2, 0, true)
	first := app(3, 5).FirstOffset
	for i := 0; i < 10; i++ {
		app(1, 5) // a second aborted transaction of producer 1
		app(3, 5)
	}
	endTxn(t, l, 1, 0, false)
	return first
}

// txnView is what must survive a restart or be equal on replicas.
type txnView struct {
	LEO, LSO  int64
	Aborted   []AbortedTxn
	Producers map[int64]producerstate.Entry
	Ongoing   []producerstate.TxnRange
}

func viewOf(t testing.TB, l *Log) txnView {
	t.Helper()
	ab, err := l.AbortedTransactions(0, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	v := txnView{LEO: l.mu.logEndOffset, Aborted: ab, Producers: map[int64]producerstate.Entry{},
		Ongoing: append([]producerstate.TxnRange(nil), l.mu.txns.Ongoing()...)}
	for pid, e := range l.mu.producers {
		v.Producers[pid] = *e
	}
	first, ok := l.mu.txns.FirstUnstable(l.mu.logEndOffset)
	v.LSO = l.mu.logEndOffset
	if ok {
		v.LSO = first
	}
	return v
}

func TestTxnRecovery(t *testing.T) {
	tests := []struct {
		name string
		// damage runs on the closed or crashed directory.
		damage func(t *testing.T, dir string)
		clean  bool
	}{
		{"clean restart uses the snapshot", func(t *testing.T, dir string) {}, true},
		{"crash without snapshots", func(t *testing.T, dir string) { removeGlob(t, dir, "*.snapshot") }, false},
		{"lost transaction index is rebuilt", func(t *testing.T, dir string) {
			removeGlob(t, dir, "*.snapshot")
			removeGlob(t, dir, "*.txnindex")
		}, false},
		{"torn transaction index entry", func(t *testing.T, dir string) {
			removeGlob(t, dir, "*.snapshot")
			names, _ := filepath.Glob(filepath.Join(dir, "*.txnindex"))
			if len(names) == 0 {
				t.Fatal("no transaction index to tear")
			}
			for _, n := range names {
				fi, err := os.Stat(n)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(n, fi.Size()-5); err != nil {
					t.Fatal(err)
				}
			}
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openTxnLog(t, dir, txnConfig(), nil, true)
			ongoing := txnScenario(t, l)
			before := viewOf(t, l)
			if len(before.Aborted) != 2 || before.LSO != ongoing || len(segmentFiles(t, dir)) < 4 {
				t.Fatalf("scenario: %d aborted, LSO %d (ongoing %d), %d segments", len(before.Aborted), before.LSO, ongoing,
					len(segmentFiles(t, dir)))
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, dir)
			l2 := openTxnLog(t, dir, txnConfig(), nil, tc.clean)
			defer l2.Close()
			if after := viewOf(t, l2); !reflect.DeepEqual(after, before) {
				t.Fatalf("after reopen:\n%+v\nbefore:\n%+v", after, before)
			}
		})
	}
}

func TestTxnTornWriteMidTransaction(t *testing.T) {
	dir := t.TempDir()
	fsys := &faultFS{}
	l := openTxnLog(t, dir, txnConfig(), fsys, true)
	mustAppend(t, l, plain(2))
	appendTxn(t, l, 1, 0, 0, 3) // 2-4, committed below
	appendTxn(t, l, 2, 0, 0, 3) // 5-7, ongoing at the crash
	endTxn(t, l, 1, 0, true)    // 8
	appendTxn(t, l, 2, 0, 3, 3) // 9-11
	fsys.set(func(f *faultFS) { f.tornWrite = true })
	if _, err := l.AppendAsLeader(txnBatch(2, 0, 6, 3), AppendOptions{LogAppendTimeMs: -1}); !errors.Is(err, ErrStorage) {
		t.Fatalf("torn write: %v", err)
	}
	// Reopen without Close, as after kill -9, checking from offset 0.
	l2, err := OpenLog(dir, txnConfig(), LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogEndOffset() != 12 {
		t.Fatalf("LEO %d, want 12", l2.LogEndOffset())
	}
	if lso := l2.LastStableOffset(12); lso != 5 {
		t.Fatalf("LSO %d, want 5: producer 1 committed, producer 2 still ongoing", lso)
	}
	first, _, ok := l2.ProducerTxnState(2)
	if !ok || first != 5 {
		t.Fatalf("producer 2 transaction from %d (%v), want 5", first, ok)
	}
	// The producer retries its batch and aborts.
	appendTxn(t, l2, 2, 0, 6, 3)
	endTxn(t, l2, 2, 0, false)
	if ab, _ := l2.AbortedTransactions(0, l2.LogEndOffset()); len(ab) != 1 || ab[0].FirstOffset != 5 {
		t.Fatalf("aborted %+v", ab)
	}
	if lso := l2.LastStableOffset(l2.LogEndOffset()); lso != l2.LogEndOffset() {
		t.Fatalf("LSO %d, LEO %d", lso, l2.LogEndOffset())
	}
}

func TestTxnTruncation(t *testing.T) {
	tests := []struct {
		name        string
		to          func(abort1, abort2, ongoing int64) int64
		wantAborted int
		wantLSO     func(abort1, abort2, ongoing int64) int64
	}{
		{"above everything", func(a1, a2, o int64) int64 { return a2 + 1 }, 2, func(a1, a2, o int64) int64 { return o }},
		{"at the second abort marker", func(a1, a2, o int64) int64 { return a2 }, 1,
			// producer 1's second transaction is ongoing again, after 3's
			func(a1, a2, o int64) int64 { return o }},
		{"inside the ongoing transaction", func(a1, a2, o int64) int64 { return o + 5 }, 1,
			func(a1, a2, o int64) int64 { return o }},
		{"at the first abort marker", func(a1, a2, o int64) int64 { return a1 }, 0, func(a1, a2, o int64) int64 { return 0 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openTxnLog(t, dir, txnConfig(), nil, true)
			defer l.Close()
			txnScenario(t, l)
			ab, _ := l.AbortedTransactions(0, l.LogEndOffset())
			ongoing, _, _ := l.ProducerTxnState(3)
			a1, a2 := ab[0].LastOffset, ab[1].LastOffset
			if err := l.TruncateTo(tc.to(a1, a2, ongoing)); err != nil {
				t.Fatal(err)
			}
			ab, _ = l.AbortedTransactions(0, l.LogEndOffset())
			if len(ab) != tc.wantAborted {
				t.Fatalf("aborted after truncation: %+v", ab)
			}
			if n := txnIndexBytes(t, dir); n != int64(tc.wantAborted)*txnIndexEntrySize {
				t.Fatalf(".txnindex files hold %d bytes after truncation", n)
			}
			want := tc.wantLSO(a1, a2, ongoing)
			if lso := l.LastStableOffset(l.LogEndOffset()); lso != min(want, l.LogEndOffset()) {
				t.Fatalf("LSO %d, want %d", lso, want)
			}
			// The files agree: reopening gives the same view.
			before := viewOf(t, l)
			l.Close()
			l2 := openTxnLog(t, dir, txnConfig(), nil, false)
			defer l2.Close()
			if after := viewOf(t, l2); !reflect.DeepEqual(after, before) {
				t.Fatalf("after reopen:\n%+v\nbefore:\n%+v", after, before)
			}
		})
	}
}

func TestTxnFollowerHasLeaderState(t *testing.T) {
	leader := openTxnLog(t, t.TempDir(), txnConfig(), nil, true)
	defer leader.Close()
	follower := openTxnLog(t, t.TempDir(), txnConfig(), nil, true)
	defer follower.Close()
	txnScenario(t, leader)
	for off := int64(0); off < leader.LogEndOffset(); {
		data, err := leader.Read(off, 1000, leader.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		last, err := follower.AppendAsFollower(data)
		if err != nil {
			t.Fatal(err)
		}
		off = last + 1
	}
	if lv, fv := viewOf(t, leader), viewOf(t, follower); !reflect.DeepEqual(lv, fv) {
		t.Fatalf("follower:\n%+v\nleader:\n%+v", fv, lv)
	}
}

// keyedTxnBatch is a transactional batch of keyed records.
func keyedTxnBatch(t testing.TB, pid int64, seq int32, recs ...kv) record.Batch {
	t.Helper()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value}
	}
	b, err := record.Build(record.BatchSpec{Attributes: record.TransactionalFlag, BaseTimestamp: testNow,
		ProducerID: pid, ProducerEpoch: 0, BaseSequence: seq, PartitionLeaderEpoch: -1}, rs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTxnCleanerDropsAbortedData(t *testing.T) {
	l := openTxnLog(t, t.TempDir(), compactConfig(), nil, true)
	defer l.Close()
	app := func(b record.Batch) {
		if _, err := l.AppendAsLeader(b, AppendOptions{LogAppendTimeMs: -1}); err != nil {
			t.Fatal(err)
		}
	}
	appendKeyed(t, l, record.CodecNone, testNow, k("a", "committed-1"))     // 0
	app(keyedTxnBatch(t, 1, 0, k("a", "committed-2"), k("b", "committed"))) // 1-2
	app(keyedTxnBatch(t, 2, 0, k("a", "aborted"), k("c", "aborted")))       // 3-4
	app(keyedTxnBatch(t, 2, 2, k("d", "aborted")))                          // 5
	app(keyedTxnBatch(t, 3, 0, k("e", "aborted, producer's last batch")))   // 6
	commit := endTxn(t, l, 1, 0, true)                                      // 7
	abort := endTxn(t, l, 2, 0, false)                                      // 8
	abort3 := endTxn(t, l, 3, 0, false)                                     // 9
	fillKeyed(t, l, record.CodecNone, 30, 5, testNow)
	ongoing := l.LogEndOffset()
	app(keyedTxnBatch(t, 4, 0, k("f", "ongoing"))) // never cleaned
	fillKeyed(t, l, record.CodecNone, 30, 5, testNow)
	l.SetHighWatermarkCheckpoint(l.LogEndOffset())
	st, err := l.Clean(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st.CleanableEnd > ongoing || st.SegmentsRewritten == 0 {
		t.Fatalf("cleanable end %d (ongoing transaction at %d), %d segments rewritten", st.CleanableEnd, ongoing,
			st.SegmentsRewritten)
	}
	got := map[int64]logRec{}
	for _, r := range records(t, l) {
		got[r.off] = r
	}
	for off, want := range map[int64]string{2: "committed", 1: "committed-2", 5: "aborted", 6: "aborted, producer's last batch", ongoing: "ongoing"} {
		// 5 and 6 are their producers' last batches, kept for the sequence
		// (still aborted: the marker and the index entry stay).
		if got[off].value != want {
			t.Errorf("offset %d: %+v, want %q", off, got[off], want)
		}
	}
	for _, off := range []int64{0, 3, 4} {
		if r, ok := got[off]; ok {
			t.Errorf("offset %d survived cleaning: %+v", off, r)
		}
	}
	markers := map[int64]bool{}
	for _, b := range readAll(t, l) {
		if b.IsControl() {
			markers[b.BaseOffset()] = true
		}
	}
	if !markers[commit] || !markers[abort] || !markers[abort3] {
		t.Fatalf("markers after cleaning: %v", markers)
	}
	ab, _ := l.AbortedTransactions(0, l.LogEndOffset())
	if len(ab) != 2 {
		t.Fatalf("aborted transactions after cleaning: %+v", ab)
	}
}

func BenchmarkAppendTransactional(b *testing.B) {
	for _, txn := range []bool{false, true} {
		name := "idempotent"
		if txn {
			name = "transactional"
		}
		b.Run(name, func(b *testing.B) {
			cfg := DefaultLogConfig()
			l := openTxnLog(b, b.TempDir(), cfg, nil, true)
			defer l.Close()
			proto := makeBatch(idem(1, 0, 0, 10))
			if txn {
				proto = txnBatch(1, 0, 0, 10)
			}
			buf := make(record.Batch, len(proto))
			b.ReportAllocs()
			b.SetBytes(int64(len(proto)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				copy(buf, proto)
				binary.BigEndian.PutUint32(buf[53:], uint32(i*10))
				buf.SetCRC()
				if _, err := l.AppendAsLeader(buf, AppendOptions{LogAppendTimeMs: -1}); err != nil {
					b.Fatal(err)
				}
				if txn && i%100 == 99 {
					if _, err := l.AppendControl(1, 0, 0, true, 0); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// markerScenario writes two transactions whose data later cleaning
// removes (a committed one superseded by a later record, an aborted one)
// and, after them, the producers' last transactions, whose markers stay.
type markerScenario struct {
	l                          *Log
	commit, abort, last1, last int64
	future                     time.Time
}

func newMarkerScenario(t *testing.T, dir string, fsys FS) *markerScenario {
	cfg := compactConfig()
	l := openTxnLog(t, dir, cfg, fsys, true)
	app := func(b record.Batch) {
		t.Helper()
		if _, err := l.AppendAsLeader(b, AppendOptions{LogAppendTimeMs: -1}); err != nil {
			t.Fatal(err)
		}
	}
	sc := &markerScenario{l: l, future: time.Now().Add(time.Duration(cfg.DeleteRetentionMs+3600_000) * time.Millisecond)}
	app(keyedTxnBatch(t, 1, 0, k("a", "in a committed transaction")))
	sc.commit = endTxn(t, l, 1, 0, true)
	app(keyedTxnBatch(t, 2, 0, k("b", "aborted")))
	sc.abort = endTxn(t, l, 2, 0, false)
	appendKeyed(t, l, record.CodecNone, testNow, k("a", "superseding"))
	fillKeyed(t, l, record.CodecNone, 30, 5, testNow)
	app(keyedTxnBatch(t, 1, 1, k("y", "producer 1's last batch")))
	app(keyedTxnBatch(t, 2, 1, k("z", "producer 2's last batch")))
	sc.last1 = endTxn(t, l, 1, 0, true)
	sc.last = endTxn(t, l, 2, 0, true)
	return sc
}

func (sc *markerScenario) markers(t *testing.T) map[int64]bool {
	m := map[int64]bool{}
	for _, b := range readAll(t, sc.l) {
		if b.IsControl() {
			m[b.BaseOffset()] = true
		}
	}
	return m
}

// pass appends a new dirty section and cleans; the next pass is past the
// delete horizon this one sets.
func (sc *markerScenario) pass(t *testing.T) (CleanStats, error) {
	fillKeyed(t, sc.l, record.CodecNone, 30, 5, testNow)
	sc.l.SetHighWatermarkCheckpoint(sc.l.LogEndOffset())
	st, err := sc.l.Clean(sc.future)
	sc.future = sc.future.Add(time.Duration(sc.l.config().DeleteRetentionMs+3600_000) * time.Millisecond)
	return st, err
}

// checkAbortsHaveMarkers checks that every .txnindex entry's ABORT marker
// is in the log: a consumer reaching an entry waits for the marker.
func checkAbortsHaveMarkers(t *testing.T, l *Log) {
	t.Helper()
	ab, err := l.AbortedTransactions(0, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	markers := map[int64]bool{}
	for _, b := range readAll(t, l) {
		if b.IsControl() {
			markers[b.BaseOffset()] = true
		}
	}
	for _, a := range ab {
		if !markers[a.LastOffset] {
			t.Fatalf("aborted transaction %+v has no marker", a)
		}
	}
}

func TestTxnCleanerRemovesMarkersOnceDataIsGone(t *testing.T) {
	dir := t.TempDir()
	sc := newMarkerScenario(t, dir, nil)
	l := sc.l
	// First pass: the data goes, its markers stay (the pass read data of
	// their transactions).
	if st, err := sc.pass(t); err != nil || st.MarkersRemoved != 0 {
		t.Fatalf("first pass: %+v, %v", st, err)
	}
	if m := sc.markers(t); !m[sc.commit] || !m[sc.abort] || !m[sc.last] || !m[sc.last1] {
		t.Fatalf("markers after the first pass: %v", m)
	}
	if ab, _ := l.AbortedTransactions(0, l.LogEndOffset()); len(ab) != 1 {
		t.Fatalf("aborted after the first pass: %+v", ab)
	}
	// Second pass: nothing of the two transactions is left; their
	// markers get a delete horizon and stay until it passes.
	if st, err := sc.pass(t); err != nil || st.MarkersRemoved != 0 {
		t.Fatalf("second pass: %+v, %v", st, err)
	}
	if m := sc.markers(t); !m[sc.commit] || !m[sc.abort] {
		t.Fatalf("markers removed before their delete horizon: %v", m)
	}
	// Third pass, past the horizon: they go.
	if st, err := sc.pass(t); err != nil || st.MarkersRemoved != 2 {
		t.Fatalf("third pass: %+v, %v", st, err)
	}
	if m := sc.markers(t); m[sc.commit] || m[sc.abort] || !m[sc.last] || !m[sc.last1] {
		t.Fatalf("markers after the second pass: %v (%+v)", m, sc)
	}
	if ab, _ := l.AbortedTransactions(0, l.LogEndOffset()); len(ab) != 0 {
		t.Fatalf("aborted after the marker went: %+v", ab)
	}
	before := viewOf(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	removeGlob(t, dir, "*.snapshot") // replay the whole cleaned log
	l2 := openTxnLog(t, dir, compactConfig(), nil, false)
	defer l2.Close()
	after := viewOf(t, l2)
	if !reflect.DeepEqual(after.Aborted, before.Aborted) || after.LSO != before.LSO || !reflect.DeepEqual(after.Ongoing, before.Ongoing) {
		t.Fatalf("after reopen:\n%+v\nbefore:\n%+v", after, before)
	}
}

// TestTxnCleanerCrashDuringSwap crashes the marker-removing pass after
// each rename: whatever is on disk, no .txnindex entry outlives its
// marker.
func TestTxnCleanerCrashDuringSwap(t *testing.T) {
	for renames := 0; ; renames++ {
		dir := t.TempDir()
		fsys := &faultFS{}
		sc := newMarkerScenario(t, dir, fsys)
		for range 2 { // the data goes, then the markers get their delete horizon
			if st, err := sc.pass(t); err != nil || st.Aborted {
				t.Fatalf("first passes: %+v, %v", st, err)
			}
		}
		fillKeyed(t, sc.l, record.CodecNone, 30, 5, testNow)
		sc.l.SetHighWatermarkCheckpoint(sc.l.LogEndOffset())
		fsys.set(func(f *faultFS) { f.limitRenames, f.renamesLeft = true, renames })
		st, err := sc.l.Clean(sc.future)
		if fsys.check() == nil {
			if err != nil || st.MarkersRemoved != 2 {
				t.Fatalf("renames %d: %+v, %v", renames, st, err)
			}
			break
		}
		l2 := openTxnLog(t, dir, compactConfig(), nil, false)
		checkAbortsHaveMarkers(t, l2)
		for _, pat := range []string{"*" + cleaner.CleanedSuffix, "*" + cleaner.SwapSuffix} {
			if left, _ := filepath.Glob(filepath.Join(dir, pat)); len(left) > 0 {
				t.Fatalf("renames %d: left %v", renames, left)
			}
		}
		l2.Close()
	}
}

func TestTxnFirstUnstableOffsetNotBelowLogStart(t *testing.T) {
	l := openTxnLog(t, t.TempDir(), txnConfig(), nil, true)
	defer l.Close()
	appendTxn(t, l, 1, 0, 0, 3) // 0-2, ongoing
	mustAppend(t, l, plain(5))  // 3-7
	l.SetHighWatermarkCheckpoint(l.LogEndOffset())
	if _, err := l.DeleteRecordsBefore(4); err != nil {
		t.Fatal(err)
	}
	if fuo, ok := l.FirstUnstableOffset(); !ok || fuo != 4 {
		t.Fatalf("first unstable offset %d %v, want the log start offset 4", fuo, ok)
	}
	if lso := l.LastStableOffset(8); lso != 4 {
		t.Fatalf("LSO %d, want 4", lso)
	}
}

func TestTxnMarkerLogAppendTime(t *testing.T) {
	cfg := txnConfig()
	cfg.MessageTimestampType = TimestampLogAppendTime
	now := time.UnixMilli(testNow + 5000)
	l, err := OpenLog(t.TempDir(), cfg, LogOptions{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	res, err := l.AppendControl(3, 1, 4, true, 9)
	if err != nil {
		t.Fatal(err)
	}
	if res.LogAppendTimeMs != now.UnixMilli() {
		t.Fatalf("log append time %d", res.LogAppendTimeMs)
	}
	b := readAll(t, l)[0]
	if !b.LogAppendTime() || b.MaxTimestamp() != now.UnixMilli() || b.PartitionLeaderEpoch() != 9 {
		t.Fatalf("marker attrs %x ts %d epoch %d", b.Attributes(), b.MaxTimestamp(), b.PartitionLeaderEpoch())
	}
	if first, coord, ok := l.ProducerTxnState(3); !ok || first != -1 || coord != 4 {
		t.Fatalf("producer state after a marker: %d %d %v", first, coord, ok)
	}
}

// txnIndexBytes is the total size of the .txnindex files in dir.
func txnIndexBytes(t testing.TB, dir string) int64 {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*"+logfs.TxnIndexSuffix))
	var n int64
	for _, name := range names {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

func TestTxnIndexDeletedWithSegment(t *testing.T) {
	dir := t.TempDir()
	l := openTxnLog(t, dir, txnConfig(), nil, true)
	defer l.Close()
	txnScenario(t, l)
	if n := txnIndexBytes(t, dir); n != 2*txnIndexEntrySize {
		t.Fatalf(".txnindex files hold %d bytes", n)
	}
	for range 30 { // roll past the last marker
		mustAppend(t, l, plain(5))
	}
	if _, err := l.DeleteRecordsBefore(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if n := txnIndexBytes(t, dir); n != 0 {
		t.Fatalf(".txnindex files hold %d bytes after their segments went", n)
	}
	if ab, _ := l.AbortedTransactions(l.LogStartOffset(), l.LogEndOffset()); len(ab) != 0 {
		t.Fatalf("aborted after deletion: %+v", ab)
	}
}
