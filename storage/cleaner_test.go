package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/storage/cleaner"
	"github.com/kbroker/kbroker/storage/logfs"
	"github.com/kbroker/kbroker/wire/record"
)

// kv is a test record: a nil key or value is null.
type kv struct {
	key, value []byte
}

func k(key, value string) kv { return kv{[]byte(key), []byte(value)} }

func tombstone(key string) kv { return kv{key: []byte(key)} }

// keyedBatch builds a client batch of recs with timestamps ts, ts+1, ...
func keyedBatch(t testing.TB, codec record.Codec, ts int64, recs ...kv) record.Batch {
	t.Helper()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Key: r.key, Value: r.value}
	}
	b, err := record.Build(record.BatchSpec{Attributes: int16(codec), BaseTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1}, rs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func appendKeyed(t testing.TB, l *Log, codec record.Codec, ts int64, recs ...kv) AppendResult {
	t.Helper()
	res, err := l.AppendAsLeader(keyedBatch(t, codec, ts, recs...), AppendOptions{LogAppendTimeMs: -1})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// logRec is one record as read back, with its absolute offset.
type logRec struct {
	off        int64
	key, value string
	nullKey    bool
	nullValue  bool
}

func toLogRec(off int64, r *record.Record) logRec {
	return logRec{off: off, key: string(r.Key), value: string(r.Value), nullKey: r.Key == nil, nullValue: r.Value == nil}
}

// records reads every record of the log with Read, checking CRCs and that
// offsets increase.
func records(t testing.TB, l *Log) []logRec {
	t.Helper()
	var out []logRec
	for _, b := range readAll(t, l) {
		if !b.ValidCRC() {
			t.Fatalf("batch %d: bad CRC", b.BaseOffset())
		}
		err := record.IterateCompacted(b, 1<<30, func(r *record.Record) error {
			rec := toLogRec(b.BaseOffset()+int64(r.OffsetDelta), r)
			if n := len(out); n > 0 && out[n-1].off >= rec.off {
				t.Fatalf("offset %d after %d", rec.off, out[n-1].off)
			}
			out = append(out, rec)
			return nil
		})
		if err != nil {
			t.Fatalf("batch %d: %v", b.BaseOffset(), err)
		}
	}
	return out
}

// compacted is what cleaning recs below end should leave: per key the
// latest record below end, all null-key records, everything from end on;
// tombstones below end go too when dropTombstones.
func compacted(recs []logRec, end int64, dropTombstones bool) []logRec {
	latest := map[string]int64{}
	for _, r := range recs {
		if r.off < end && !r.nullKey {
			latest[r.key] = r.off
		}
	}
	var out []logRec
	for _, r := range recs {
		switch {
		case r.off >= end || r.nullKey:
		case latest[r.key] != r.off:
			continue
		case r.nullValue && dropTombstones:
			continue
		}
		out = append(out, r)
	}
	return out
}

func compactConfig() LogConfig {
	cfg := DefaultLogConfig()
	cfg.CleanupPolicy = "compact"
	cfg.SegmentBytes = 2048
	cfg.IndexIntervalBytes = 200
	return cfg
}

// fillKeyed appends n batches of 3 records over nkeys keys; every fifth
// record has a null key.
func fillKeyed(t testing.TB, l *Log, codec record.Codec, n, nkeys int, ts int64) {
	t.Helper()
	for i := 0; i < n; i++ {
		var recs []kv
		for j := 0; j < 3; j++ {
			seq := i*3 + j
			r := k(fmt.Sprintf("key-%d", seq*7%nkeys), fmt.Sprintf("value-%d", seq))
			if seq%5 == 4 {
				r.key = nil
			}
			recs = append(recs, r)
		}
		appendKeyed(t, l, codec, ts, recs...)
	}
}

func TestCleanKeepsLatestPerKey(t *testing.T) {
	for _, codec := range []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			dir := t.TempDir()
			cfg := compactConfig()
			m, l := openTestManager(t, OSFS{}, dir, cfg)
			fillKeyed(t, l, codec, 200, 23, testNow)
			before := records(t, l)
			leo, lso := l.LogEndOffset(), l.LogStartOffset()

			// Readers keep going while the cleaner runs.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := l.Read(0, 1<<20, leo, true); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			st, err := l.Clean(time.UnixMilli(testNow))
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if st.SegmentsRewritten == 0 || st.RecordsRemoved == 0 || st.Keys != 23 || st.FirstDirtyOffset != 0 {
				t.Fatalf("stats %+v", st)
			}
			want := compacted(before, st.CleanableEnd, false)
			after := records(t, l)
			if fmt.Sprint(after) != fmt.Sprint(want) {
				t.Fatalf("after cleaning:\n%v\nwant\n%v", after, want)
			}
			if int64(len(before)-len(after)) != st.RecordsRemoved {
				t.Fatalf("removed %d records, stats say %d", len(before)-len(after), st.RecordsRemoved)
			}
			if l.LogEndOffset() != leo || l.LogStartOffset() != lso {
				t.Fatalf("log [%d, %d), was [%d, %d)", l.LogStartOffset(), l.LogEndOffset(), lso, leo)
			}
			checkFetchFromEveryOffset(t, l, after)

			// Cleaning again finds nothing dirty; with a dirty section
			// again, only its keys matter.
			if st2, err := l.Clean(time.UnixMilli(testNow)); err != nil || st2.SegmentsRewritten != 0 {
				t.Fatalf("second clean: %+v, %v", st2, err)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			for _, clean := range []bool{true, false} {
				if !clean {
					mustRemove(t, filepath.Join(dir, cleanShutdownFile))
					mustRemove(t, filepath.Join(dir, recoveryPointFile))
				}
				m2, l2 := openTestManager(t, OSFS{}, dir, cfg)
				if got := records(t, l2); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("reopened (clean %v): %v", clean, got)
				}
				if l2.LogEndOffset() != leo || l2.LogStartOffset() != lso {
					t.Fatalf("reopened: log [%d, %d)", l2.LogStartOffset(), l2.LogEndOffset())
				}
				if err := m2.Close(); err != nil {
					t.Fatal(err)
				}
			}
			cp, err := os.ReadFile(filepath.Join(dir, cleanerCheckpointFile))
			if err != nil || !bytes.Contains(cp, fmt.Appendf(nil, "t 0 %d\n", st.CleanableEnd)) {
				t.Fatalf("cleaner checkpoint %q, %v", cp, err)
			}
		})
	}
}

// checkFetchFromEveryOffset reads from every offset of the log: the first
// record at or after it in what Read returns is the first surviving one.
func checkFetchFromEveryOffset(t *testing.T, l *Log, surviving []logRec) {
	t.Helper()
	for off := l.LogStartOffset(); off < l.LogEndOffset(); off++ {
		data, err := l.Read(off, 1, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		b, _, err := record.Parse(data)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		i := sort.Search(len(surviving), func(i int) bool { return surviving[i].off >= off })
		var first *logRec
		if err := record.IterateCompacted(b, 1<<30, func(r *record.Record) error {
			if o := b.BaseOffset() + int64(r.OffsetDelta); o >= off && first == nil {
				rec := toLogRec(o, r)
				first = &rec
			}
			return nil
		}); err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		if first == nil || *first != surviving[i] {
			t.Fatalf("read %d: first record %v, want %v", off, first, surviving[i])
		}
	}
}

// Delete horizon (Kafka's KIP-534): the cleaning that keeps a tombstone
// rewrites its batch with the delete-horizon flag and base timestamp
// cleaning time + delete.retention.ms (the records keep their
// timestamps); a later cleaning drops the tombstone once past the
// horizon, however old the tombstone itself is.
func TestCleanTombstones(t *testing.T) {
	day := (24 * time.Hour).Milliseconds()
	tests := []struct {
		name        string
		retention   int64 // delete.retention.ms
		later       int64 // how long after the first cleaning the second runs
		wantRemoved bool
	}{
		{"before the horizon: kept", day, day - 1, false},
		{"at the horizon: removed", day, day, true},
		{"zero retention: removed at the next cleaning", 0, 0, true},
		{"long retention: kept", 7 * day, 2 * day, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := compactConfig()
			cfg.SegmentBytes = 100 // one batch per segment
			cfg.DeleteRetentionMs = tc.retention
			_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
			old := testNow - 30*day // far older than any retention: age does not matter
			appendKeyed(t, l, record.CodecNone, old, k("a", "1"), k("b", "1"))
			appendKeyed(t, l, record.CodecNone, old+5, tombstone("a"), k("c", "1"))
			appendKeyed(t, l, record.CodecNone, testNow, k("d", "1"))
			first := testNow + 1000
			st, err := l.Clean(time.UnixMilli(first))
			if err != nil || st.TombstonesRemoved != 0 {
				t.Fatalf("first cleaning: %+v, %v", st, err)
			}
			want := []logRec{{off: 1, key: "b", value: "1"}, {off: 2, key: "a", nullValue: true},
				{off: 3, key: "c", value: "1"}, {off: 4, key: "d", value: "1"}}
			if got := records(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("after the first cleaning: got %v\nwant %v", got, want)
			}
			// The tombstone's batch carries the horizon; its records
			// their own timestamps.
			for _, b := range readAll(t, l) {
				if b.BaseOffset() != 2 {
					continue
				}
				if b.Attributes()&record.DeleteHorizonFlag == 0 || b.BaseTimestamp() != first+tc.retention {
					t.Fatalf("tombstone batch: attributes %#x, base timestamp %d, want horizon %d", b.Attributes(), b.BaseTimestamp(), first+tc.retention)
				}
				var ts []int64
				if err := record.IterateCompacted(b, 1<<20, func(r *record.Record) error {
					ts = append(ts, b.BaseTimestamp()+r.TimestampDelta)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(ts) != fmt.Sprint([]int64{old + 5, old + 6}) || b.MaxTimestamp() != old+6 {
					t.Fatalf("record timestamps %v, max %d, want from %d", ts, b.MaxTimestamp(), old+5)
				}
			}
			// More dirty data, and a second cleaning.
			appendKeyed(t, l, record.CodecNone, testNow, k("d", "2"))
			appendKeyed(t, l, record.CodecNone, testNow, k("e", "1"))
			st, err = l.Clean(time.UnixMilli(first + tc.later))
			if err != nil {
				t.Fatal(err)
			}
			want = append(want[:3], logRec{off: 5, key: "d", value: "2"}, logRec{off: 6, key: "e", value: "1"})
			if tc.wantRemoved {
				want = append(want[:1], want[2:]...)
			}
			if got := records(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("after the second cleaning: got %v\nwant %v", got, want)
			}
			if wantTomb := map[bool]int64{true: 1}[tc.wantRemoved]; st.TombstonesRemoved != wantTomb {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestCleanLeavesActiveSegmentAndLagAlone(t *testing.T) {
	cfg := compactConfig()
	cfg.SegmentBytes = 100 // one batch per segment
	dir := t.TempDir()
	_, l := openTestManager(t, OSFS{}, dir, cfg)
	old := testNow - time.Hour.Milliseconds()
	appendKeyed(t, l, record.CodecNone, old, k("a", "1"))
	appendKeyed(t, l, record.CodecNone, old, k("a", "2"))
	appendKeyed(t, l, record.CodecNone, testNow, k("a", "3")) // recent
	appendKeyed(t, l, record.CodecNone, testNow, k("a", "4"), k("b", "1"), k("b", "2"), k("a", "5"))
	segs := segmentFiles(t, l.Dir())
	if len(segs) != 4 {
		t.Fatalf("%d segments", len(segs))
	}
	active, _ := os.ReadFile(segs[3])

	// min.compaction.lag.ms of 10 minutes stops before the recent segment.
	lagged := *l.config()
	lagged.MinCompactionLagMs = (10 * time.Minute).Milliseconds()
	if err := l.SetConfig(lagged); err != nil {
		t.Fatal(err)
	}
	st, err := l.Clean(time.UnixMilli(testNow))
	if err != nil {
		t.Fatal(err)
	}
	if st.CleanableEnd != 2 || st.SegmentsRewritten != 1 {
		t.Fatalf("stats %+v", st)
	}
	want := []logRec{{off: 1, key: "a", value: "2"}, {off: 2, key: "a", value: "3"}, {off: 3, key: "a", value: "4"},
		{off: 4, key: "b", value: "1"}, {off: 5, key: "b", value: "2"}, {off: 6, key: "a", value: "5"}}
	if got := records(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("with lag: %v", got)
	}

	// Without the lag, up to the active segment: its records stay,
	// superseded or not, and so do its bytes.
	lagged.MinCompactionLagMs = 0
	if err := l.SetConfig(lagged); err != nil {
		t.Fatal(err)
	}
	if st, err = l.Clean(time.UnixMilli(testNow)); err != nil {
		t.Fatal(err)
	}
	if st.FirstDirtyOffset != 2 || st.CleanableEnd != 3 {
		t.Fatalf("stats %+v", st)
	}
	want = want[1:]
	if got := records(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("without lag: %v", got)
	}
	if now, _ := os.ReadFile(segs[3]); !bytes.Equal(now, active) {
		t.Fatal("the active segment changed")
	}
	// The first segment is empty now; the log still starts at 0 and
	// reads there return the first surviving batch.
	if l.LogStartOffset() != 0 || l.LogEndOffset() != 7 {
		t.Fatalf("log [%d, %d)", l.LogStartOffset(), l.LogEndOffset())
	}
	checkFetchFromEveryOffset(t, l, want)
}

func TestCleanCrashDuringSwap(t *testing.T) {
	cfg := compactConfig()
	cfg.SegmentBytes = 400
	build := func(t *testing.T, fsys FS, dir string) *Log {
		_, l := openTestManager(t, fsys, dir, cfg)
		fillKeyed(t, l, record.CodecNone, 20, 5, testNow)
		return l
	}
	ref := build(t, OSFS{}, t.TempDir())
	before := records(t, ref)
	st, err := ref.Clean(time.UnixMilli(testNow))
	if err != nil || st.SegmentsRewritten < 2 {
		t.Fatalf("reference clean: %+v, %v", st, err)
	}
	after := records(t, ref)
	inRange := func(recs []logRec, lo, hi int64) string {
		var out []logRec
		for _, r := range recs {
			if r.off >= lo && r.off < hi {
				out = append(out, r)
			}
		}
		return fmt.Sprint(out)
	}
	for renames := 0; ; renames++ {
		dir := t.TempDir()
		fsys := &faultFS{}
		l := build(t, fsys, dir)
		fsys.set(func(f *faultFS) { f.limitRenames, f.renamesLeft = true, renames })
		_, err := l.Clean(time.UnixMilli(testNow))
		crashed := fsys.check() != nil
		if !crashed {
			if err != nil {
				t.Fatal(err)
			}
			if renames < 6*st.SegmentsRewritten {
				t.Fatalf("%d renames were enough", renames)
			}
			break
		}
		// The process died: open what is on disk.
		m2, l2 := openTestManager(t, OSFS{}, dir, cfg)
		got := records(t, l2)
		if l2.LogEndOffset() != ref.LogEndOffset() {
			t.Fatalf("renames %d: LEO %d", renames, l2.LogEndOffset())
		}
		bases := segmentFiles(t, dir)
		for i, name := range bases {
			lo, _ := logfs.ParseFileName(filepath.Base(name), logfs.LogSuffix)
			hi := l2.LogEndOffset()
			if i+1 < len(bases) {
				hi, _ = logfs.ParseFileName(filepath.Base(bases[i+1]), logfs.LogSuffix)
			}
			if g := inRange(got, lo, hi); g != inRange(before, lo, hi) && g != inRange(after, lo, hi) {
				t.Fatalf("renames %d: segment %d holds %s\nbefore %s\nafter %s", renames, lo, g,
					inRange(before, lo, hi), inRange(after, lo, hi))
			}
		}
		for _, pat := range []string{"*" + cleaner.CleanedSuffix, "*" + cleaner.SwapSuffix} {
			if left, _ := filepath.Glob(filepath.Join(dir, "t-0", pat)); len(left) > 0 {
				t.Fatalf("renames %d: left %v", renames, left)
			}
		}
		// The reopened log cleans to the reference result.
		if _, err := l2.Clean(time.UnixMilli(testNow)); err != nil {
			t.Fatal(err)
		}
		if g := records(t, l2); fmt.Sprint(g) != fmt.Sprint(after) {
			t.Fatalf("renames %d: cleaned after reopen: %v", renames, g)
		}
		m2.Close()
	}
}

func TestRetentionFollowsCleanupPolicy(t *testing.T) {
	tests := []struct {
		policy      string
		wantDeleted bool
		wantCompact bool
	}{
		{"delete", true, false},
		{"", true, false},
		{"compact", false, true},
		{"compact,delete", true, true},
		{"delete, compact", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.policy, func(t *testing.T) {
			cfg := compactConfig()
			cfg.CleanupPolicy = tc.policy
			if got := cfg.Compact(); got != tc.wantCompact {
				t.Fatalf("Compact() %v", got)
			}
			_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
			old := testNow - 10*24*time.Hour.Milliseconds()
			fillKeyed(t, l, record.CodecNone, 50, 10, old)
			appendKeyed(t, l, record.CodecNone, testNow, k("new", "1"))
			n, err := l.ApplyRetention(time.UnixMilli(testNow), cfg.RetentionMs, cfg.RetentionBytes)
			if err != nil {
				t.Fatal(err)
			}
			if (n > 0) != tc.wantDeleted {
				t.Fatalf("deleted %d segments", n)
			}
		})
	}
	bad := compactConfig()
	bad.CleanupPolicy = "compact,forever"
	if bad.Validate() == nil {
		t.Fatal("bad cleanup.policy accepted")
	}
}

func TestCompactAndDelete(t *testing.T) {
	cfg := compactConfig()
	cfg.CleanupPolicy = "compact,delete"
	cfg.RetentionMs = time.Hour.Milliseconds()
	_, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
	old := testNow - 2*time.Hour.Milliseconds()
	fillKeyed(t, l, record.CodecNone, 30, 5, old)
	oldEnd := l.LogEndOffset()
	fillKeyed(t, l, record.CodecNone, 30, 5, testNow)
	if _, err := l.Clean(time.UnixMilli(testNow)); err != nil {
		t.Fatal(err)
	}
	n, err := l.ApplyRetention(time.UnixMilli(testNow), cfg.RetentionMs, cfg.RetentionBytes)
	if err != nil || n == 0 {
		t.Fatalf("retention: %d, %v", n, err)
	}
	// The old segments, emptied or not, are gone but for the one that
	// also holds recent records.
	segs := segmentFiles(t, l.Dir())
	second, _ := logfs.ParseFileName(filepath.Base(segs[1]), logfs.LogSuffix)
	if first, _ := logfs.ParseFileName(filepath.Base(segs[0]), logfs.LogSuffix); first != l.LogStartOffset() ||
		first == 0 || first >= oldEnd || second < oldEnd {
		t.Fatalf("segments start at %d, %d; old records end at %d", first, second, oldEnd)
	}
}

func TestManagerCleansByDirtyRatio(t *testing.T) {
	tests := []struct {
		name      string
		policy    string
		ratio     float64
		wantClean bool
	}{
		{"dirty enough", "compact", 0.5, true},
		{"all dirty meets 1.0", "compact", 1.0, true},
		{"delete policy", "delete", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := compactConfig()
			cfg.CleanupPolicy, cfg.MinCleanableDirtyRatio = tc.policy, tc.ratio
			m, l := openTestManager(t, OSFS{}, t.TempDir(), cfg)
			fillKeyed(t, l, record.CodecNone, 100, 10, testNow)
			now := time.UnixMilli(testNow)
			if r, err := l.DirtyRatio(now); err != nil || r != 1 {
				t.Fatalf("dirty ratio %v, %v", r, err)
			}
			if got := m.CleanLogs(context.Background(), now) == 1; got != tc.wantClean {
				t.Fatalf("cleaned %v", got)
			}
			if !tc.wantClean {
				return
			}
			if r, _ := l.DirtyRatio(now); r != 0 {
				t.Fatalf("dirty ratio after cleaning %v", r)
			}
			// A little more: below the threshold, not cleaned.
			fillKeyed(t, l, record.CodecNone, 10, 10, testNow)
			r, _ := l.DirtyRatio(now)
			if want := r >= tc.ratio; (m.CleanLogs(context.Background(), now) == 1) != want {
				t.Fatalf("dirty ratio %v, threshold %v: cleaned %v", r, tc.ratio, !want)
			}
		})
	}
}

func TestManagerRunCleans(t *testing.T) {
	m, l := openTestManager(t, OSFS{}, t.TempDir(), compactConfig())
	fillKeyed(t, l, record.CodecNone, 100, 10, testNow)
	m.SetCleanerBackoff(10 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	err := testutil.Poll(context.Background(), 5*time.Second, func() error {
		if r, _ := l.DirtyRatio(time.Now()); r != 0 {
			return fmt.Errorf("dirty ratio %v", r)
		}
		return nil
	})
	cancel()
	<-done
	if err != nil {
		t.Fatalf("Run did not clean: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFollowerAfterCleaning(t *testing.T) {
	cfg := compactConfig()
	_, leader := openTestManager(t, OSFS{}, t.TempDir(), cfg)
	fillKeyed(t, leader, record.CodecNone, 100, 10, testNow)
	if _, err := leader.Clean(time.UnixMilli(testNow)); err != nil {
		t.Fatal(err)
	}
	// The cleaned leader still takes appends and follower-style appends
	// at its end.
	appendKeyed(t, leader, record.CodecNone, testNow, k("key-1", "after"))
	next := keyedBatch(t, record.CodecNone, testNow, k("key-2", "replicated"))
	next.SetBaseOffset(leader.LogEndOffset())
	if last, err := leader.AppendAsFollower(next); err != nil || last != leader.LogEndOffset()-1 {
		t.Fatalf("AppendAsFollower on the cleaned log: %d, %v", last, err)
	}

	replicate := func(follower *Log) error {
		for off := follower.LogEndOffset(); off < leader.LogEndOffset(); {
			data, err := leader.Read(off, 500, leader.LogEndOffset(), true)
			if err != nil {
				return err
			}
			last, err := follower.AppendAsFollower(data)
			if err != nil {
				return err
			}
			off = last + 1
		}
		return nil
	}
	_, follower := openTestManager(t, OSFS{}, t.TempDir(), cfg)
	if err := replicate(follower); err != nil {
		t.Fatal(err)
	}
	if follower.LogEndOffset() != leader.LogEndOffset() {
		t.Fatalf("follower LEO %d, leader %d", follower.LogEndOffset(), leader.LogEndOffset())
	}
	if a, b := records(t, follower), records(t, leader); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("follower %v\nleader %v", a, b)
	}
	appendKeyed(t, leader, record.CodecNone, testNow, k("key-3", "later"))
	if err := replicate(follower); err != nil || follower.LogEndOffset() != leader.LogEndOffset() {
		t.Fatalf("catching up: %v", err)
	}

	// A delete-policy follower refuses the gaps.
	plainCfg := cfg
	plainCfg.CleanupPolicy = "delete"
	_, strict := openTestManager(t, OSFS{}, t.TempDir(), plainCfg)
	if err := replicate(strict); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("delete-policy follower: %v", err)
	}
}

func TestCleanKeepsProducersLastBatch(t *testing.T) {
	cfg := compactConfig()
	cfg.SegmentBytes = 150
	dir := t.TempDir()
	m, l := openTestManager(t, OSFS{}, dir, cfg)
	idemBatch := func(seq int32, recs ...kv) {
		b := keyedBatch(t, record.CodecNone, testNow, recs...)
		var rs []record.Record
		if err := record.Iterate(b, 1<<20, func(r *record.Record) error {
			rs = append(rs, record.Record{OffsetDelta: r.OffsetDelta, TimestampDelta: r.TimestampDelta,
				Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		b2, err := record.Build(record.BatchSpec{BaseTimestamp: testNow, ProducerID: 9, ProducerEpoch: 1, BaseSequence: seq,
			PartitionLeaderEpoch: -1}, rs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendAsLeader(b2, AppendOptions{LogAppendTimeMs: -1}); err != nil {
			t.Fatal(err)
		}
	}
	idemBatch(0, k("a", "1"), k("b", "1"))
	idemBatch(2, k("a", "2"), k("b", "2")) // the producer's last batch
	appendKeyed(t, l, record.CodecNone, testNow, k("a", "3"), k("b", "3"))
	appendKeyed(t, l, record.CodecNone, testNow, k("z", "active"))
	if _, err := l.Clean(time.UnixMilli(testNow)); err != nil {
		t.Fatal(err)
	}
	want := []logRec{{off: 3, key: "b", value: "2"}, {off: 4, key: "a", value: "3"}, {off: 5, key: "b", value: "3"},
		{off: 6, key: "z", value: "active"}}
	if got := records(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v", got)
	}
	m.Close()
	// Rebuilt from the log alone (no snapshot), the producer's sequence
	// is still known.
	removeGlob(t, filepath.Join(dir, "t-0"), "*"+logfs.SnapshotSuffix)
	m2, l2 := openTestManager(t, OSFS{}, dir, cfg)
	defer m2.Close()
	if epoch, last, ok := l2.ProducerState(9); !ok || epoch != 1 || last != 3 {
		t.Fatalf("producer state %d %d %v", epoch, last, ok)
	}
}

// BenchmarkClean cleans a 64 MiB log of 100-byte values in which 10% of
// the keys are unique (each key written ten times).
func BenchmarkClean(b *testing.B) {
	const total = 64 << 20
	cfg := compactConfig()
	cfg.SegmentBytes = 8 << 20
	cfg.IndexIntervalBytes = 4096
	tmpl := b.TempDir()
	m, l := openTestManager(b, OSFS{}, tmpl, cfg)
	value := bytes.Repeat([]byte("v"), 100)
	const perBatch = 50
	const uniq = total / 121 / 10 // a record takes about 121 bytes
	for n, written := 0, 0; written < total; {
		var recs []kv
		for j := 0; j < perBatch; j++ {
			recs = append(recs, kv{key: fmt.Appendf(nil, "key-%08d", (n*7919)%uniq), value: value})
			n++
		}
		written += len(keyedBatch(b, record.CodecNone, testNow, recs...))
		appendKeyed(b, l, record.CodecNone, testNow, recs...)
	}
	if err := m.Close(); err != nil {
		b.Fatal(err)
	}
	var size int64
	files, _ := filepath.Glob(filepath.Join(tmpl, "t-0", "*"))
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && filepath.Ext(f) == logfs.LogSuffix {
			size += fi.Size()
		}
	}
	b.SetBytes(size)
	b.ResetTimer()
	var st CleanStats
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "t-0"), 0o755); err != nil {
			b.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "t-0", filepath.Base(f)), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		m, l := openTestManager(b, OSFS{}, dir, cfg)
		b.StartTimer()
		var err error
		if st, err = l.Clean(time.UnixMilli(testNow)); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		m.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(st.Keys), "keys")
	b.ReportMetric(float64(st.BytesWritten)/float64(st.BytesRead), "out/in")
}

func TestCleanAfterTruncation(t *testing.T) {
	_, l := openTestManager(t, OSFS{}, t.TempDir(), compactConfig())
	fillKeyed(t, l, record.CodecNone, 100, 10, testNow)
	now := time.UnixMilli(testNow)
	st, err := l.Clean(now)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(st.CleanableEnd / 2); err != nil {
		t.Fatal(err)
	}
	fillKeyed(t, l, record.CodecNone, 100, 10, testNow)
	// Records below the old cleaner offset were replaced: all is dirty.
	if r, err := l.DirtyRatio(now); err != nil || r != 1 {
		t.Fatalf("dirty ratio %v, %v", r, err)
	}
	before := records(t, l)
	st, err = l.Clean(now)
	if err != nil || st.FirstDirtyOffset != 0 {
		t.Fatalf("%+v, %v", st, err)
	}
	if got, want := records(t, l), compacted(before, st.CleanableEnd, false); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}
