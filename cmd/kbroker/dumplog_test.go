package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/wire/record"
)

const segName = "00000000000000000000.log"

func mustBuild(t *testing.T, spec record.BatchSpec, recs []record.Record) record.Batch {
	t.Helper()
	b, err := record.Build(spec, recs)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func dumpString(t *testing.T, path string, opts dumpOptions) string {
	t.Helper()
	var out, warn bytes.Buffer
	opts.Warn = &warn
	if err := dumpLog(&out, path, opts); err != nil {
		t.Fatalf("dumpLog(%s): %v (warnings: %s)", path, err, warn.String())
	}
	return out.String()
}

func checkLines(t *testing.T, got string, want []string) {
	t.Helper()
	gotLines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(gotLines) != len(want) {
		t.Errorf("got %d lines, want %d\ngot:\n%s\nwant:\n%s", len(gotLines), len(want), got, strings.Join(want, "\n"))
		return
	}
	for i := range want {
		if gotLines[i] != want[i] {
			t.Errorf("line %d:\n got: %s\nwant: %s", i, gotLines[i], want[i])
		}
	}
	if !strings.HasSuffix(got, "\n") {
		t.Errorf("output does not end in a newline")
	}
}

// referenceBatches rebuilds the two batches of the kafka-dump-log.sh
// example in the reference text (a Java producer sent k0..k2 with header
// trace=abc on k0, flushed, then k3..k4), byte for byte.
func referenceBatches(t *testing.T) []record.Batch {
	hdr := []record.Header{{Key: "trace", Value: []byte("abc")}}
	b1 := mustBuild(t, record.BatchSpec{
		BaseOffset: 0, PartitionLeaderEpoch: 0, BaseTimestamp: 1794025864656,
		ProducerID: 0, ProducerEpoch: 0, BaseSequence: 0,
	}, []record.Record{
		{OffsetDelta: 0, TimestampDelta: 0, Key: []byte("k0"), Value: []byte("hello-0"), Headers: hdr},
		{OffsetDelta: 1, TimestampDelta: 26, Key: []byte("k1"), Value: []byte("hello-1")},
		{OffsetDelta: 2, TimestampDelta: 26, Key: []byte("k2"), Value: []byte("hello-2")},
	})
	b2 := mustBuild(t, record.BatchSpec{
		BaseOffset: 3, PartitionLeaderEpoch: 0, BaseTimestamp: 1794025864917,
		ProducerID: 0, ProducerEpoch: 0, BaseSequence: 3,
	}, []record.Record{
		{OffsetDelta: 0, Key: []byte("k3"), Value: []byte("hello-3")},
		{OffsetDelta: 1, Key: []byte("k4"), Value: []byte("hello-4")},
	})
	return []record.Batch{b1, b2}
}

// TestDumpLogReferenceExample checks the output against what
// kafka-dump-log.sh --deep-iteration --print-data-log printed for the
// same bytes (including Kafka's CRCs, sizes and positions).
func TestDumpLogReferenceExample(t *testing.T) {
	bs := referenceBatches(t)
	p := writeFile(t, t.TempDir(), segName, append(append([]byte(nil), bs[0]...), bs[1]...))
	got := dumpString(t, p, dumpOptions{DeepIteration: true, PrintData: true})
	checkLines(t, got, []string{
		"Dumping " + p,
		"Log starting offset: 0",
		"baseOffset: 0 lastOffset: 2 count: 3 baseSequence: 0 lastSequence: 2 producerId: 0 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1794025864682 size: 119 magic: 2 compresscodec: none crc: 199030714 isvalid: true",
		"| offset: 0 CreateTime: 1794025864656 keySize: 2 valueSize: 7 sequence: 0 headerKeys: [trace] key: k0 payload: hello-0",
		"| offset: 1 CreateTime: 1794025864682 keySize: 2 valueSize: 7 sequence: 1 headerKeys: [] key: k1 payload: hello-1",
		"| offset: 2 CreateTime: 1794025864682 keySize: 2 valueSize: 7 sequence: 2 headerKeys: [] key: k2 payload: hello-2",
		"baseOffset: 3 lastOffset: 4 count: 2 baseSequence: 3 lastSequence: 4 producerId: 0 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 119 CreateTime: 1794025864917 size: 93 magic: 2 compresscodec: none crc: 3096572621 isvalid: true",
		"| offset: 3 CreateTime: 1794025864917 keySize: 2 valueSize: 7 sequence: 3 headerKeys: [] key: k3 payload: hello-3",
		"| offset: 4 CreateTime: 1794025864917 keySize: 2 valueSize: 7 sequence: 4 headerKeys: [] key: k4 payload: hello-4",
	})

	// Without --print-data-log the record lines stop after headerKeys,
	// and without --deep-iteration there are none.
	got = dumpString(t, p, dumpOptions{DeepIteration: true})
	if !strings.Contains(got, "\n| offset: 0 CreateTime: 1794025864656 keySize: 2 valueSize: 7 sequence: 0 headerKeys: [trace]\n") {
		t.Errorf("deep iteration without data:\n%s", got)
	}
	got = dumpString(t, p, dumpOptions{})
	if strings.Contains(got, "| offset:") || strings.Count(got, "baseOffset:") != 2 {
		t.Errorf("shallow dump:\n%s", got)
	}
	// --print-data-log implies --deep-iteration.
	got = dumpString(t, p, dumpOptions{PrintData: true})
	if !strings.Contains(got, "key: k4 payload: hello-4\n") {
		t.Errorf("print-data-log alone:\n%s", got)
	}
}

// TestDumpLogBatches dumps one segment of many kinds of batches. In the
// expected lines {pos}, {size} and {crc} stand for the batch's own values
// (compressed sizes depend on the compressor).
func TestDumpLogBatches(t *testing.T) {
	const ts = int64(1700000000000)
	kv := func(i int32, k, v []byte, h ...record.Header) record.Record {
		return record.Record{OffsetDelta: i, TimestampDelta: int64(i) * 5, Key: k, Value: v, Headers: h}
	}
	three := []record.Record{
		kv(0, []byte("a"), []byte("one")),
		kv(1, nil, []byte("two"), record.Header{Key: "h1", Value: []byte("x")}, record.Header{Key: "h2"}),
		kv(2, []byte{}, nil),
	}
	threeLines := func(label string, times [3]int64, seq [3]int32) []string {
		return []string{
			"| offset: +0 " + label + ": " + strconv.FormatInt(times[0], 10) + " keySize: 1 valueSize: 3 sequence: " + strconv.Itoa(int(seq[0])) + " headerKeys: [] key: a payload: one",
			"| offset: +1 " + label + ": " + strconv.FormatInt(times[1], 10) + " keySize: -1 valueSize: 3 sequence: " + strconv.Itoa(int(seq[1])) + " headerKeys: [h1,h2] payload: two",
			"| offset: +2 " + label + ": " + strconv.FormatInt(times[2], 10) + " keySize: 0 valueSize: -1 sequence: " + strconv.Itoa(int(seq[2])) + " headerKeys: [] key: ",
		}
	}
	noSeq := [3]int32{-1, -1, -1}
	createTimes := [3]int64{ts, ts + 5, ts + 10}

	type tc struct {
		name  string
		spec  record.BatchSpec
		recs  []record.Record
		batch string   // expected batch line
		recLn []string // expected record lines
	}
	var cases []tc
	for _, codec := range []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		cases = append(cases, tc{
			name:  "codec " + codec.String(),
			spec:  record.BatchSpec{Attributes: int16(codec), BaseTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: 7},
			recs:  three,
			batch: "lastOffset: +2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 7 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: {pos} CreateTime: 1700000000010 size: {size} magic: 2 compresscodec: " + codec.String() + " crc: {crc} isvalid: true",
			recLn: threeLines("CreateTime", createTimes, noSeq),
		})
	}
	cases = append(cases,
		tc{
			name:  "idempotent producer",
			spec:  record.BatchSpec{BaseTimestamp: ts, ProducerID: 4242, ProducerEpoch: 3, BaseSequence: 10},
			recs:  three,
			batch: "lastOffset: +2 count: 3 baseSequence: 10 lastSequence: 12 producerId: 4242 producerEpoch: 3 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: {pos} CreateTime: 1700000000010 size: {size} magic: 2 compresscodec: none crc: {crc} isvalid: true",
			recLn: threeLines("CreateTime", createTimes, [3]int32{10, 11, 12}),
		},
		tc{
			name:  "sequence wraps",
			spec:  record.BatchSpec{BaseTimestamp: ts, ProducerID: 1, BaseSequence: 1<<31 - 2},
			recs:  three,
			batch: "lastOffset: +2 count: 3 baseSequence: 2147483646 lastSequence: 0 producerId: 1 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: {pos} CreateTime: 1700000000010 size: {size} magic: 2 compresscodec: none crc: {crc} isvalid: true",
			recLn: threeLines("CreateTime", createTimes, [3]int32{2147483646, 2147483647, 0}),
		},
		tc{
			name:  "log append time",
			spec:  record.BatchSpec{Attributes: record.TimestampTypeMask | int16(record.CodecGzip), BaseTimestamp: ts, MaxTimestamp: ts + 99999, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			recs:  three,
			batch: "lastOffset: +2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: {pos} LogAppendTime: 1700000099999 size: {size} magic: 2 compresscodec: gzip crc: {crc} isvalid: true",
			recLn: threeLines("LogAppendTime", [3]int64{ts + 99999, ts + 99999, ts + 99999}, noSeq),
		},
		tc{
			name:  "transactional with delete horizon",
			spec:  record.BatchSpec{Attributes: record.TransactionalFlag | record.DeleteHorizonFlag, BaseTimestamp: ts, ProducerID: 9, ProducerEpoch: 1, BaseSequence: 0},
			recs:  []record.Record{kv(0, []byte("k"), []byte("v"))},
			batch: "lastOffset: +0 count: 1 baseSequence: 0 lastSequence: 0 producerId: 9 producerEpoch: 1 partitionLeaderEpoch: 0 isTransactional: true isControl: false deleteHorizonMs: OptionalLong[1700000000000] position: {pos} CreateTime: 1700000000000 size: {size} magic: 2 compresscodec: none crc: {crc} isvalid: true",
			recLn: []string{"| offset: +0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 sequence: 0 headerKeys: [] key: k payload: v"},
		},
		tc{
			name: "commit marker",
			spec: record.BatchSpec{Attributes: record.TransactionalFlag | record.ControlFlag, BaseTimestamp: ts, ProducerID: 9, ProducerEpoch: 1, BaseSequence: -1},
			recs: []record.Record{{
				Key:   []byte{0, 0, 0, 1},             // version 0, type COMMIT
				Value: []byte{0, 0, 0, 0, 0, 5, 0, 0}, // version 0, coordinator epoch 5 (+ padding Kafka ignores)
			}},
			batch: "lastOffset: +0 count: 1 baseSequence: -1 lastSequence: -1 producerId: 9 producerEpoch: 1 partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: {pos} CreateTime: 1700000000000 size: {size} magic: 2 compresscodec: none crc: {crc} isvalid: true",
			recLn: []string{"| offset: +0 CreateTime: 1700000000000 keySize: 4 valueSize: 8 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 5"},
		},
		tc{
			name:  "non-UTF-8 payload",
			spec:  record.BatchSpec{BaseTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			recs:  []record.Record{kv(0, []byte("k\xff"), []byte("ok"))},
			batch: "lastOffset: +0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: {pos} CreateTime: 1700000000000 size: {size} magic: 2 compresscodec: none crc: {crc} isvalid: true",
			recLn: []string{"| offset: +0 CreateTime: 1700000000000 keySize: 2 valueSize: 2 sequence: -1 headerKeys: [] key: k\uFFFD payload: ok"},
		},
	)

	// fill substitutes b's values, and "+N" offsets relative to its base.
	fill := func(s string, b record.Batch, pos int64) string {
		s = strings.NewReplacer(
			"{pos}", strconv.FormatInt(pos, 10),
			"{size}", strconv.Itoa(len(b)),
			"{crc}", strconv.FormatUint(uint64(b.CRC()), 10),
		).Replace(s)
		for _, prefix := range []string{"lastOffset: +", "offset: +"} {
			if i := strings.Index(s, prefix); i >= 0 {
				j := i + len(prefix)
				k := j + strings.IndexByte(s[j:], ' ')
				n, err := strconv.ParseInt(s[j:k], 10, 64)
				if err != nil {
					t.Fatalf("bad expected line %q", s)
				}
				s = s[:i] + strings.TrimSuffix(prefix, "+") + strconv.FormatInt(b.BaseOffset()+n, 10) + s[k:]
			}
		}
		return s
	}
	expect := func(c tc, b record.Batch, pos int64) []string {
		lines := []string{"baseOffset: " + strconv.FormatInt(b.BaseOffset(), 10) + " " + fill(c.batch, b, pos)}
		for _, l := range c.recLn {
			lines = append(lines, fill(l, b, pos))
		}
		return lines
	}

	// Each case alone, then all of them in one segment one after another.
	var all []byte
	var allWant []string
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := mustBuild(t, c.spec, c.recs)
			p := writeFile(t, t.TempDir(), segName, b)
			want := append([]string{"Dumping " + p, "Log starting offset: 0"}, expect(c, b, 0)...)
			checkLines(t, dumpString(t, p, dumpOptions{DeepIteration: true, PrintData: true}), want)
		})
		spec := c.spec
		spec.BaseOffset = int64(len(allWant)) * 10
		b := mustBuild(t, spec, c.recs)
		allWant = append(allWant, expect(c, b, int64(len(all)))...)
		all = append(all, b...)
	}
	t.Run("all in one segment", func(t *testing.T) {
		p := writeFile(t, t.TempDir(), segName, all)
		want := append([]string{"Dumping " + p, "Log starting offset: 0"}, allWant...)
		checkLines(t, dumpString(t, p, dumpOptions{PrintData: true}), want)
	})
}

func TestDumpLogTruncatedAndCorrupt(t *testing.T) {
	bs := referenceBatches(t)
	whole := append(append([]byte(nil), bs[0]...), bs[1]...)
	first := "baseOffset: 0 lastOffset: 2 count: 3 baseSequence: 0 lastSequence: 2 producerId: 0 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1794025864682 size: 119 magic: 2 compresscodec: none crc: 199030714 isvalid: true"

	for _, c := range []struct {
		name string
		data []byte
		tail int
	}{
		{"cut inside the second batch", whole[:len(whole)-10], 83},
		{"cut inside the second header", whole[:119+20], 20},
		{"fewer bytes than a length prefix", whole[:119+5], 5},
		{"zero-filled tail", append(append([]byte(nil), bs[0]...), make([]byte, 40)...), 40},
		{"garbage length", append(append([]byte(nil), bs[0]...), 0, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff, 1, 2, 3), 15},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), segName, c.data)
			var out, warn bytes.Buffer
			if err := dumpLog(&out, p, dumpOptions{Warn: &warn}); err != nil {
				t.Fatalf("dumpLog: %v", err)
			}
			checkLines(t, out.String(), []string{
				"Dumping " + p,
				"Log starting offset: 0",
				first,
				"Found " + strconv.Itoa(c.tail) + " invalid bytes at the end of " + segName,
			})
			if warn.Len() == 0 {
				t.Errorf("no diagnostic on the warning writer")
			}
		})
	}

	t.Run("bad crc", func(t *testing.T) {
		data := append([]byte(nil), whole...)
		data[119+70]++ // inside the second batch's records
		p := writeFile(t, t.TempDir(), segName, data)
		got := dumpString(t, p, dumpOptions{})
		if !strings.Contains(got, "position: 119 CreateTime: 1794025864917 size: 93 magic: 2 compresscodec: none crc: 3096572621 isvalid: false\n") {
			t.Errorf("want isvalid: false on the second batch:\n%s", got)
		}
	})

	t.Run("undecodable records", func(t *testing.T) {
		data := append([]byte(nil), whole...)
		data[119+record.HeaderSize] = 0x7f // first record's length varint: far too long
		p := writeFile(t, t.TempDir(), segName, data)
		var out, warn bytes.Buffer
		if err := dumpLog(&out, p, dumpOptions{DeepIteration: true, Warn: &warn}); err != nil {
			t.Fatalf("dumpLog: %v", err)
		}
		if strings.Count(out.String(), "baseOffset:") != 2 || !strings.Contains(warn.String(), "position 119") {
			t.Errorf("out:\n%s\nwarn:\n%s", out.String(), warn.String())
		}
	})

	t.Run("empty segment", func(t *testing.T) {
		p := writeFile(t, t.TempDir(), "00000000000000000042.log", nil)
		checkLines(t, dumpString(t, p, dumpOptions{}), []string{"Dumping " + p, "Log starting offset: 42"})
	})
}

func TestDumpIndexes(t *testing.T) {
	dir := t.TempDir()
	be := binary.BigEndian

	var idx []byte
	for _, e := range [][2]int32{{0, 0}, {5, 4200}, {17, 9000}} {
		idx = be.AppendUint32(idx, uint32(e[0]))
		idx = be.AppendUint32(idx, uint32(e[1]))
	}
	p := writeFile(t, dir, "00000000000000000100.index", idx)
	checkLines(t, dumpString(t, p, dumpOptions{}), []string{
		"Dumping " + p,
		"offset: 100 position: 0",
		"offset: 105 position: 4200",
		"offset: 117 position: 9000",
	})

	// A preallocated index: zero entries past the last real one are not
	// printed; a partial entry at the end is reported.
	p = writeFile(t, dir, "00000000000000000200.index", append(append([]byte(nil), idx[8:16]...), make([]byte, 32)...))
	checkLines(t, dumpString(t, p, dumpOptions{}), []string{
		"Dumping " + p,
		"offset: 205 position: 4200",
	})
	p = writeFile(t, dir, "00000000000000000300.index", append(append([]byte(nil), idx[8:16]...), 1, 2, 3))
	checkLines(t, dumpString(t, p, dumpOptions{}), []string{
		"Dumping " + p,
		"offset: 305 position: 4200",
		"Found 3 invalid bytes at the end of 00000000000000000300.index",
	})

	var tidx []byte
	for _, e := range []struct {
		ts  int64
		off int32
	}{{1700000000000, 0}, {1700000000500, 7}, {1700000009000, 30}} {
		tidx = be.AppendUint64(tidx, uint64(e.ts))
		tidx = be.AppendUint32(tidx, uint32(e.off))
	}
	tidx = append(tidx, make([]byte, 24)...)
	p = writeFile(t, dir, "00000000000000000050.timeindex", tidx)
	checkLines(t, dumpString(t, p, dumpOptions{}), []string{
		"Dumping " + p,
		"timestamp: 1700000000000 offset: 50",
		"timestamp: 1700000000500 offset: 57",
		"timestamp: 1700000009000 offset: 80",
	})

	p = writeFile(t, dir, "00000000000000000000.index", nil)
	checkLines(t, dumpString(t, p, dumpOptions{}), []string{"Dumping " + p})
}

func TestDumpLogCommand(t *testing.T) {
	dir := t.TempDir()
	bs := referenceBatches(t)
	logPath := writeFile(t, dir, segName, bs[0])
	snap := writeFile(t, dir, "00000000000000000003.snapshot", []byte{1, 2, 3})
	ckpt := writeFile(t, dir, "leader-epoch-checkpoint", []byte("0\n1\n0 0\n"))
	badName := writeFile(t, dir, "segment.log", bs[0])
	missing := filepath.Join(dir, "00000000000000000009.log")

	t.Run("flags after files, unsupported files", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := dumpLogCmd([]string{snap, logPath, "--print-data-log", ckpt}, &out, &errOut)
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
		checkLines(t, out.String(), []string{
			"Dumping " + snap,
			"Dumping " + logPath,
			"Log starting offset: 0",
			"baseOffset: 0 lastOffset: 2 count: 3 baseSequence: 0 lastSequence: 2 producerId: 0 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1794025864682 size: 119 magic: 2 compresscodec: none crc: 199030714 isvalid: true",
			"| offset: 0 CreateTime: 1794025864656 keySize: 2 valueSize: 7 sequence: 0 headerKeys: [trace] key: k0 payload: hello-0",
			"| offset: 1 CreateTime: 1794025864682 keySize: 2 valueSize: 7 sequence: 1 headerKeys: [] key: k1 payload: hello-1",
			"| offset: 2 CreateTime: 1794025864682 keySize: 2 valueSize: 7 sequence: 2 headerKeys: [] key: k2 payload: hello-2",
			"Dumping " + ckpt,
		})
		for _, p := range []string{snap, ckpt} {
			if !strings.Contains(errOut.String(), p+": unsupported file type") {
				t.Errorf("stderr lacks the unsupported message for %s:\n%s", p, errOut.String())
			}
		}
	})

	t.Run("kafka style --files", func(t *testing.T) {
		var out, errOut bytes.Buffer
		if code := dumpLogCmd([]string{"--deep-iteration", "--files", logPath + "," + logPath}, &out, &errOut); code != 0 {
			t.Fatalf("exit code %d: %s", code, errOut.String())
		}
		if n := strings.Count(out.String(), "| offset:"); n != 6 {
			t.Errorf("%d record lines, want 6:\n%s", n, out.String())
		}
		if strings.Contains(out.String(), "payload:") {
			t.Errorf("payload printed without --print-data-log")
		}
	})

	t.Run("unreadable files", func(t *testing.T) {
		var out, errOut bytes.Buffer
		if code := dumpLogCmd([]string{missing, badName, logPath}, &out, &errOut); code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
		if strings.Count(out.String(), "baseOffset:") != 1 || strings.Count(errOut.String(), "kbroker dump-log: ") != 2 {
			t.Errorf("out:\n%s\nerr:\n%s", out.String(), errOut.String())
		}
	})

	t.Run("usage", func(t *testing.T) {
		var out, errOut bytes.Buffer
		if code := dumpLogCmd(nil, &out, &errOut); code != 2 {
			t.Errorf("no files: exit code %d, want 2", code)
		}
		if code := dumpLogCmd([]string{"--bogus", logPath}, &out, &errOut); code != 2 {
			t.Errorf("bad flag: exit code %d, want 2", code)
		}
		if code := dumpLogCmd([]string{"--help"}, &out, &errOut); code != 0 {
			t.Errorf("--help: exit code %d, want 0", code)
		}
		if !strings.Contains(errOut.String(), "usage: kbroker dump-log") {
			t.Errorf("no usage text:\n%s", errOut.String())
		}
	})
}

// TestDumpLogStorageFlow writes through the storage package as the
// broker does, closes it, and dumps the files it left.
func TestDumpLogStorageFlow(t *testing.T) {
	dir := t.TempDir()
	m, err := storage.OpenManager([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := storage.DefaultLogConfig()
	cfg.IndexIntervalBytes = 0 // an index entry for every batch after the first
	cfg.SegmentAge = 0         // the test's timestamps are old: never roll by age
	l, err := m.GetOrCreate("orders", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}

	const ts = int64(1700000000000)
	type appended struct {
		b    record.Batch
		opts storage.AppendOptions
	}
	var batches []appended
	for i, c := range []struct {
		codec record.Codec
		opts  storage.AppendOptions
	}{
		{record.CodecNone, storage.AppendOptions{LeaderEpoch: 3, LogAppendTimeMs: -1}},
		{record.CodecZstd, storage.AppendOptions{LeaderEpoch: 3, LogAppendTimeMs: -1}},
		{record.CodecLZ4, storage.AppendOptions{LeaderEpoch: 4, LogAppendTimeMs: ts + 777}},
	} {
		b := mustBuild(t, record.BatchSpec{
			Attributes: int16(c.codec), BaseTimestamp: ts + int64(i)*100,
			ProducerID: 11, ProducerEpoch: 0, BaseSequence: int32(2 * i), PartitionLeaderEpoch: -1,
		}, []record.Record{
			{OffsetDelta: 0, Key: []byte("key-" + strconv.Itoa(2*i)), Value: []byte("value")},
			{OffsetDelta: 1, TimestampDelta: 1, Key: []byte("key-" + strconv.Itoa(2*i+1)), Value: []byte("value"), Headers: []record.Header{{Key: "h", Value: []byte("v")}}},
		})
		res, err := l.AppendAsLeader(b, c.opts)
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if res.FirstOffset != int64(2*i) {
			t.Fatalf("append %d: first offset %d", i, res.FirstOffset)
		}
		batches = append(batches, appended{b, c.opts})
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	partDir := filepath.Join(dir, "orders-0")
	logPath := filepath.Join(partDir, segName)
	want := []string{"Dumping " + logPath, "Log starting offset: 0"}
	var pos int64
	var positions []int64
	for i, a := range batches {
		b := a.b
		label, recTS := "CreateTime", [2]int64{ts + int64(i)*100, ts + int64(i)*100 + 1}
		maxTS := ts + int64(i)*100 + 1
		if a.opts.LogAppendTimeMs >= 0 {
			label, recTS, maxTS = "LogAppendTime", [2]int64{ts + 777, ts + 777}, ts+777
		}
		want = append(want,
			"baseOffset: "+strconv.Itoa(2*i)+" lastOffset: "+strconv.Itoa(2*i+1)+" count: 2 baseSequence: "+strconv.Itoa(2*i)+" lastSequence: "+strconv.Itoa(2*i+1)+
				" producerId: 11 producerEpoch: 0 partitionLeaderEpoch: "+strconv.Itoa(int(a.opts.LeaderEpoch))+" isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty"+
				" position: "+strconv.FormatInt(pos, 10)+" "+label+": "+strconv.FormatInt(maxTS, 10)+" size: "+strconv.Itoa(len(b))+" magic: 2 compresscodec: "+b.Codec().String()+
				" crc: "+strconv.FormatUint(uint64(b.CRC()), 10)+" isvalid: true",
			"| offset: "+strconv.Itoa(2*i)+" "+label+": "+strconv.FormatInt(recTS[0], 10)+" keySize: 5 valueSize: 5 sequence: "+strconv.Itoa(2*i)+" headerKeys: [] key: key-"+strconv.Itoa(2*i)+" payload: value",
			"| offset: "+strconv.Itoa(2*i+1)+" "+label+": "+strconv.FormatInt(recTS[1], 10)+" keySize: 5 valueSize: 5 sequence: "+strconv.Itoa(2*i+1)+" headerKeys: [h] key: key-"+strconv.Itoa(2*i+1)+" payload: value",
		)
		positions = append(positions, pos)
		pos += int64(len(b))
	}
	checkLines(t, dumpString(t, logPath, dumpOptions{PrintData: true}), want)

	// The index has an entry (last offset, position) for every batch but
	// the first.
	idxPath := filepath.Join(partDir, "00000000000000000000.index")
	checkLines(t, dumpString(t, idxPath, dumpOptions{}), []string{
		"Dumping " + idxPath,
		"offset: 3 position: " + strconv.FormatInt(positions[1], 10),
		"offset: 5 position: " + strconv.FormatInt(positions[2], 10),
	})

	// Every other file the broker left behind is either dumpable or
	// reported as unsupported, never a crash.
	entries, err := os.ReadDir(partDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		var out bytes.Buffer
		err := dumpLog(&out, filepath.Join(partDir, e.Name()), dumpOptions{DeepIteration: true})
		if err != nil && err != errUnsupportedFile {
			t.Errorf("%s: %v", e.Name(), err)
		}
		if strings.HasSuffix(e.Name(), ".timeindex") {
			for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")[1:] {
				if !strings.HasPrefix(l, "timestamp: ") {
					t.Errorf("%s: unexpected line %q", e.Name(), l)
				}
			}
		}
	}
}
