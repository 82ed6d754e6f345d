package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/objstore"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/storage/remote"
	"github.com/kbroker/kbroker/wire/record"
)

// testLog writes batches of 10 records of 100 bytes into a log with
// segments of about segBytes, and returns its closed segments.
func testLog(t *testing.T, batches int, segBytes int64) (*storage.Log, []storage.ClosedSegment) {
	t.Helper()
	cfg := storage.DefaultLogConfig()
	cfg.SegmentBytes = segBytes
	cfg.IndexIntervalBytes = 1024
	l, err := storage.OpenLog(t.TempDir(), cfg, storage.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for i := range batches {
		recs := make([]record.Record, 10)
		for j := range recs {
			recs[j] = record.Record{OffsetDelta: int32(j), Value: bytes.Repeat([]byte{byte(i)}, 100)}
		}
		b, err := record.Build(record.BatchSpec{BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendAsLeader(b, storage.AppendOptions{LeaderEpoch: 3, LogAppendTimeMs: -1}); err != nil {
			t.Fatal(err)
		}
	}
	segs := l.ClosedSegments(-1, l.LogEndOffset())
	if len(segs) < 2 {
		t.Fatalf("%d closed segments", len(segs))
	}
	return l, segs
}

func newS3(t *testing.T, st *objstore.Store) *remote.S3 {
	t.Helper()
	s, err := remote.NewS3(remote.S3Config{Endpoint: st.Endpoint, Bucket: st.Bucket, Region: st.Region, PathStyle: true,
		AccessKeyID: st.AccessKey, SecretAccessKey: st.SecretKey, Prefix: "c1/"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func segmentOf(cs storage.ClosedSegment) remote.Segment {
	return remote.Segment{Topic: "orders", TopicID: [16]byte{7}, Partition: 2, ID: remote.NewSegmentID(),
		BaseOffset: cs.BaseOffset, EndOffset: cs.EndOffset, Size: cs.Size}
}

func filesOf(cs storage.ClosedSegment) remote.Files {
	return remote.Files{Log: cs.Log, OffsetIndex: cs.OffsetIndex, TimeIndex: cs.TimeIndex, TxnIndex: cs.TxnIndex,
		ProducerSnapshot: cs.ProducerSnapshot, LeaderEpochs: cs.LeaderEpochs}
}

// TestS3CopyFetchDelete: a segment's files become objects under its key
// layout, ranges read back byte for byte, and a delete leaves nothing.
func TestS3CopyFetchDelete(t *testing.T) {
	st := objstore.Start(t)
	s := newS3(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, segs := testLog(t, 40, 8<<10)
	cs := segs[0]
	seg := segmentOf(cs)
	if err := s.CopySegment(ctx, seg, filesOf(cs)); err != nil {
		t.Fatal(err)
	}
	keys, err := s.List(ctx, remote.PartitionPrefix("orders", [16]byte{7}, 2))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{remote.Key(seg, remote.FileOffsetIndex), remote.Key(seg, remote.FileTimeIndex),
		remote.Key(seg, remote.FileLeaderEpochs), remote.Key(seg, remote.FileLog)}
	if cs.ProducerSnapshot != "" {
		want = append(want, remote.Key(seg, remote.FileProducerSnapshot))
	}
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("objects %v, want %v", keys, want)
	}
	if !strings.HasPrefix(keys[0], fmt.Sprintf("orders-%s/2/%020d-", "BwAAAAAAAAAAAAAAAAAAAA", cs.BaseOffset)) {
		t.Fatalf("key %s", keys[0])
	}
	local, err := os.ReadFile(cs.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ start, end int64 }{{0, -1}, {0, 100}, {100, 4000}, {cs.Size - 10, cs.Size}, {5, 5}} {
		body, err := s.Fetch(ctx, seg, remote.FileLog, r.start, r.end)
		if err != nil {
			t.Fatalf("fetch %v: %v", r, err)
		}
		got, err := io.ReadAll(body)
		body.Close()
		end := r.end
		if end < 0 {
			end = cs.Size
		}
		if err != nil || !bytes.Equal(got, local[r.start:max(r.start, end)]) {
			t.Fatalf("fetch %v: %d bytes, err %v", r, len(got), err)
		}
	}
	body, err := s.Fetch(ctx, seg, remote.FileLeaderEpochs, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	epochs, _ := io.ReadAll(body)
	body.Close()
	if string(epochs) != "0\n1\n3 0\n" {
		t.Fatalf("leader epochs %q", epochs)
	}
	if err := s.DeleteSegment(ctx, seg); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSegment(ctx, seg); err != nil {
		t.Fatalf("deleting again: %v", err)
	}
	if _, err := s.Fetch(ctx, seg, remote.FileLog, 0, -1); !errors.Is(err, remote.ErrNotFound) {
		t.Fatalf("fetch after delete: %v", err)
	}
	if keys, err := s.List(ctx, ""); err != nil || len(keys) != 0 {
		t.Fatalf("left %v, %v", keys, err)
	}
}

// TestReaderMatchesLocal: reads through the chunk cache return what the
// local log returns, for offsets anywhere in the segment and any size.
func TestReaderMatchesLocal(t *testing.T) {
	st := objstore.Start(t)
	s := newS3(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, segs := testLog(t, 60, 16<<10)
	cs := segs[1]
	seg := segmentOf(cs)
	if err := s.CopySegment(ctx, seg, filesOf(cs)); err != nil {
		t.Fatal(err)
	}
	r := remote.NewReader(s, remote.ReaderConfig{ChunkSize: 4096, CacheBytes: 3 * 4096, Threads: 2})
	defer r.Close()
	mid := (cs.BaseOffset + cs.EndOffset) / 2
	tests := []struct {
		offset      int64
		maxBytes    int
		minOneBatch bool
	}{
		{cs.BaseOffset, 1 << 20, true},
		{cs.BaseOffset + 1, 3000, true},
		{mid, 2500, false},
		{mid, 10, true},
		{mid, 10, false},
		{cs.EndOffset, 1 << 20, true},
	}
	for _, tc := range tests {
		got, err := r.Read(ctx, seg, tc.offset, tc.maxBytes, tc.minOneBatch)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		want, err := l.Read(tc.offset, tc.maxBytes, cs.EndOffset+1, tc.minOneBatch)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%+v: remote %d bytes, local %d", tc, len(got), len(want))
		}
		if c := r.CachedBytes(); c > 3*4096 {
			t.Fatalf("cache holds %d bytes, bound %d", c, 3*4096)
		}
	}
	if _, err := r.Read(ctx, seg, cs.EndOffset+1, 100, true); !errors.Is(err, remote.ErrOffsetNotInSegment) {
		t.Fatalf("offset past the segment: %v", err)
	}
}

// TestReaderStoreDown: with the store stopped a read fails by its
// deadline instead of hanging, and works again once the store is back.
func TestReaderStoreDown(t *testing.T) {
	st := objstore.Start(t)
	s := newS3(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, segs := testLog(t, 40, 8<<10)
	cs := segs[0]
	seg := segmentOf(cs)
	if err := s.CopySegment(ctx, seg, filesOf(cs)); err != nil {
		t.Fatal(err)
	}
	r := remote.NewReader(s, remote.ReaderConfig{ChunkSize: 4096, CacheBytes: 8192, Threads: 2, FetchTimeout: 5 * time.Second})
	defer r.Close()
	st.Stop()
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
	_, err := r.Read(rctx, seg, cs.BaseOffset, 1<<20, true)
	rcancel()
	if err == nil {
		t.Fatal("read with the store down succeeded")
	}
	if err := s.CopySegment(ctx, segmentOf(segs[1]), filesOf(segs[1])); err == nil {
		t.Fatal("copy with the store down succeeded")
	}
	st.Restart()
	var got []byte
	for i := 0; i < 20 && len(got) == 0; i++ {
		if got, err = r.Read(ctx, seg, cs.BaseOffset, 1<<20, true); err != nil {
			time.Sleep(250 * time.Millisecond)
		}
	}
	if len(got) == 0 {
		t.Fatalf("read after the store came back: %v", err)
	}
}
