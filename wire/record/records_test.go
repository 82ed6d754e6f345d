package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// sampleRecords covers null versus empty keys and values and headers.
func sampleRecords() []Record {
	return []Record{
		{OffsetDelta: 0, Key: nil, Value: nil},
		{OffsetDelta: 1, TimestampDelta: 5, Key: []byte{}, Value: []byte{}},
		{OffsetDelta: 2, TimestampDelta: -3, Key: []byte("k"), Value: []byte("value")},
		{OffsetDelta: 3, TimestampDelta: 1 << 40, Key: []byte("key"), Value: bytes.Repeat([]byte("abc"), 1000),
			Headers: []Header{{Key: "h1", Value: []byte("v1")}, {Key: "", Value: nil}, {Key: "h3", Value: []byte{}}}},
		{OffsetDelta: 4, Attributes: 0, Value: []byte("last")},
	}
}

// collect returns deep copies of the records of b.
func collect(b Batch, limit int) ([]Record, error) {
	var out []Record
	err := Iterate(b, limit, func(r *Record) error {
		c := *r
		c.Key = clone(r.Key)
		c.Value = clone(r.Value)
		c.Headers = nil
		for _, h := range r.Headers {
			c.Headers = append(c.Headers, Header{Key: h.Key, Value: clone(h.Value)})
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

// clone keeps nil as nil and empty as empty.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func TestBuildIterateRoundTrip(t *testing.T) {
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			want := sampleRecords()
			spec := BatchSpec{
				BaseOffset: 42, PartitionLeaderEpoch: 7, Attributes: int16(codec),
				BaseTimestamp: 1_700_000_000_000, ProducerID: 99, ProducerEpoch: 3, BaseSequence: 11,
			}
			b, err := Build(spec, want)
			if err != nil {
				t.Fatal(err)
			}
			if _, rest, err := Parse(b); err != nil || len(rest) != 0 {
				t.Fatalf("Parse: %v, %d left", err, len(rest))
			}
			if !b.ValidCRC() {
				t.Fatal("bad CRC")
			}
			if b.Codec() != codec || b.RecordCount() != 5 || b.LastOffsetDelta() != 4 ||
				b.BaseOffset() != 42 || b.PartitionLeaderEpoch() != 7 || b.ProducerID() != 99 ||
				b.ProducerEpoch() != 3 || b.BaseSequence() != 11 {
				t.Fatalf("header mismatch: %v", b[:HeaderSize])
			}
			if got := b.MaxTimestamp(); got != spec.BaseTimestamp+1<<40 {
				t.Fatalf("maxTimestamp %d", got)
			}
			got, err := collect(b, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("records differ:\n got %+v\nwant %+v", got, want)
			}
			if got[0].Key != nil || got[0].Value != nil || got[1].Key == nil || got[1].Value == nil {
				t.Fatal("null/empty distinction lost")
			}
			if err := Validate(b, 1<<20); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestIterateLimit(t *testing.T) {
	recs := []Record{{Value: make([]byte, 10000)}}
	for _, codec := range allCodecs[1:] {
		b, err := Build(BatchSpec{Attributes: int16(codec)}, recs)
		if err != nil {
			t.Fatal(err)
		}
		size := len(AppendRecord(nil, &recs[0]))
		if err := Validate(b, size); err != nil {
			t.Errorf("%s: exact limit: %v", codec, err)
		}
		if err := Validate(b, size-1); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: limit-1: got %v, want ErrTooLarge", codec, err)
		}
	}
}

func TestIterateCallbackError(t *testing.T) {
	b, err := Build(BatchSpec{}, sampleRecords())
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	n := 0
	err = Iterate(b, 1<<20, func(*Record) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("got %v after %d records", err, n)
	}
}

// rawBatch wraps an uncompressed records section in a header, with the
// given count and lastOffsetDelta, and a valid CRC.
func rawBatch(count, lastOffsetDelta int32, records []byte) Batch {
	b := make([]byte, HeaderSize, HeaderSize+len(records))
	b = append(b, records...)
	binary.BigEndian.PutUint32(b[batchLengthOffset:], uint32(len(b)-LogOverhead))
	b[magicOffset] = MagicV2
	binary.BigEndian.PutUint32(b[lastOffsetDeltaOffset:], uint32(lastOffsetDelta))
	binary.BigEndian.PutUint32(b[recordCountOffset:], uint32(count))
	Batch(b).SetCRC()
	return b
}

func varint(v int64) []byte { return binary.AppendVarint(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestIterateErrors(t *testing.T) {
	rec := func(delta int32) []byte { return AppendRecord(nil, &Record{OffsetDelta: delta, Value: []byte("v")}) }
	two := cat(rec(0), rec(1))
	// body builds a record from its fields with a correct length prefix.
	body := func(fields ...[]byte) []byte {
		f := cat(fields...)
		return cat(varint(int64(len(f))), f)
	}
	overlong := []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01} // 6-byte varint
	tests := []struct {
		name string
		b    Batch
		want error
	}{
		{"ok", rawBatch(2, 1, two), nil},
		{"short header", rawBatch(2, 1, two)[:40], ErrCorrupt},
		{"count too high", rawBatch(3, 2, two), ErrInvalid},
		{"count too low", rawBatch(1, 0, two), ErrCorrupt},
		{"zero count", rawBatch(0, -1, nil), ErrInvalid},
		{"negative count", rawBatch(-1, -2, two), ErrInvalid},
		{"lastOffsetDelta mismatch", rawBatch(2, 5, two), ErrInvalid},
		{"non-contiguous deltas", rawBatch(2, 1, cat(rec(0), rec(2))), ErrInvalid},
		{"deltas start at 1", rawBatch(2, 1, cat(rec(1), rec(2))), ErrInvalid},
		{"huge count", rawBatch(1<<30, 1<<30-1, two), ErrInvalid},
		{"trailing byte", rawBatch(2, 1, cat(two, []byte{0})), ErrCorrupt},
		{"truncated record", rawBatch(2, 1, two[:len(two)-1]), ErrCorrupt},
		{"length past end", rawBatch(1, 0, cat(varint(100), rec(0)[1:])), ErrCorrupt},
		{"negative length", rawBatch(1, 0, cat(varint(-5), make([]byte, 10))), ErrCorrupt},
		{"overlong length varint", rawBatch(1, 0, cat(overlong, make([]byte, 10))), ErrCorrupt},
		{"unterminated varint", rawBatch(1, 0, bytes.Repeat([]byte{0xff}, 10)), ErrCorrupt},
		{"length longer than fields", rawBatch(1, 0, body([]byte{0}, varint(0), varint(0), varint(-1), varint(-1), varint(0), []byte{0})), ErrCorrupt},
		{"length shorter than fields", rawBatch(1, 0, cat(body([]byte{0}, varint(0), varint(0), varint(-1), varint(-1)), varint(0), make([]byte, 6))), ErrCorrupt},
		{"key past record", rawBatch(1, 0, body([]byte{0}, varint(0), varint(0), varint(50), varint(-1), varint(0))), ErrCorrupt},
		{"key length -2", rawBatch(1, 0, body([]byte{0}, varint(0), varint(0), varint(-2), varint(-1), varint(0))), ErrCorrupt},
		{"bad offset delta varint", rawBatch(1, 0, body([]byte{0}, varint(0), overlong, varint(-1), varint(-1), varint(0))), ErrCorrupt},
		{"offset delta out of int32", rawBatch(1, 0, body([]byte{0}, varint(0), varint(1<<33), varint(-1), varint(-1), varint(0))), ErrCorrupt},
		{"negative header count", rawBatch(1, 0, body([]byte{0}, varint(0), varint(0), varint(-1), varint(-1), varint(-1))), ErrCorrupt},
		{"huge header count", rawBatch(1, 0, body([]byte{0}, varint(0), varint(0), varint(-1), varint(-1), varint(1<<30), make([]byte, 8))), ErrCorrupt},
		{"null header key", rawBatch(1, 0, body([]byte{0}, varint(0), varint(0), varint(-1), varint(-1), varint(1), varint(-1), varint(-1))), ErrCorrupt},
		{"unknown codec", func() Batch {
			b := rawBatch(2, 1, two)
			binary.BigEndian.PutUint16(b[attributesOffset:], 6)
			return b
		}(), ErrCorrupt},
		{"garbage gzip", func() Batch {
			b := rawBatch(2, 1, two)
			binary.BigEndian.PutUint16(b[attributesOffset:], uint16(CodecGzip))
			return b
		}(), ErrCorrupt},
		{"bad batchLength", func() Batch {
			b := rawBatch(2, 1, two)
			binary.BigEndian.PutUint32(b[batchLengthOffset:], 1000)
			return b
		}(), ErrCorrupt},
		{"magic 1", func() Batch {
			b := rawBatch(2, 1, two)
			b[magicOffset] = 1
			return b
		}(), ErrMagic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.b, 1<<20)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	if _, err := Build(BatchSpec{}, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty: %v", err)
	}
	if _, err := Build(BatchSpec{Attributes: 7}, sampleRecords()); err == nil {
		t.Fatal("codec 7 accepted")
	}
}

func TestAppendRecordMatchesKmsg(t *testing.T) {
	for i, r := range sampleRecords() {
		ours := AppendRecord(nil, &r)
		kr := toKmsgRecord(&r)
		theirs := kr.AppendTo(nil)
		if !bytes.Equal(ours, theirs) {
			t.Errorf("record %d: ours %x, kmsg %x", i, ours, theirs)
		}
	}
}

func toKmsgRecord(r *Record) kmsg.Record {
	kr := kmsg.Record{
		Attributes:       r.Attributes,
		TimestampDelta64: r.TimestampDelta,
		OffsetDelta:      r.OffsetDelta,
		Key:              r.Key,
		Value:            r.Value,
	}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
	}
	// Length is everything after the length varint: encode with a
	// one-byte zero length, then fix it.
	kr.Length = int32(len(kr.AppendTo(nil)) - 1)
	return kr
}

// kmsgBatch encodes records the way franz-go does: kmsg.Record for each
// record, kmsg.RecordBatch for the header, CRC-32C over bytes 21.., and
// the records section compressed with codec.
func kmsgBatch(t testing.TB, codec Codec, recs []Record) []byte {
	var raw []byte
	for i := range recs {
		kr := toKmsgRecord(&recs[i])
		raw = kr.AppendTo(raw)
	}
	compressed, err := Compress(codec, nil, raw)
	if err != nil {
		t.Fatal(err)
	}
	kb := kmsg.RecordBatch{
		FirstOffset:     0,
		Magic:           2,
		Attributes:      int16(codec),
		LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp:  1000,
		MaxTimestamp:    2000,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(len(recs)),
		Records:         compressed,
	}
	b := kb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestKmsgInterop(t *testing.T) {
	want := sampleRecords()
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			// franz-go encoded, parsed by us.
			b, rest, err := Parse(kmsgBatch(t, codec, want))
			if err != nil || len(rest) != 0 {
				t.Fatalf("Parse: %v", err)
			}
			if !b.ValidCRC() {
				t.Fatal("CRC")
			}
			got, err := collect(b, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("records differ:\n got %+v\nwant %+v", got, want)
			}

			// Built by us, parsed by kmsg.
			ours, err := Build(BatchSpec{Attributes: int16(codec)}, want)
			if err != nil {
				t.Fatal(err)
			}
			var kb kmsg.RecordBatch
			if err := kb.ReadFrom(ours); err != nil {
				t.Fatal(err)
			}
			if kb.NumRecords != 5 || int(kb.Length) != len(ours)-12 || uint32(kb.CRC) != Batch(ours).CRC() {
				t.Fatalf("kmsg header %+v", kb)
			}
			raw, err := Decompress(codec, kb.Records, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				var kr kmsg.Record
				if err := kr.ReadFrom(raw); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if kr.OffsetDelta != int32(i) || !bytes.Equal(kr.Value, want[i].Value) || len(kr.Headers) != len(want[i].Headers) {
					t.Fatalf("record %d: %+v", i, kr)
				}
				raw = raw[varintSize(int64(kr.Length))+int(kr.Length):]
			}
			if len(raw) != 0 {
				t.Fatalf("%d bytes left", len(raw))
			}
		})
	}
}

// xerialFrame frames src the way snappy-java's SnappyOutputStream does,
// in chunks of chunkSize uncompressed bytes.
func xerialFrame(src []byte, chunkSize int) []byte {
	out := append([]byte{}, xerialMagic...)
	out = binary.BigEndian.AppendUint32(out, 1)
	out = binary.BigEndian.AppendUint32(out, 1)
	for len(src) > 0 {
		n := min(chunkSize, len(src))
		block := snappy.Encode(nil, src[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		src = src[n:]
	}
	return out
}

func TestSnappyXerial(t *testing.T) {
	src := bytes.Repeat([]byte("kafka snappy xerial "), 5000)
	got, err := Decompress(CodecSnappy, xerialFrame(src, 32<<10), len(src))
	if err != nil || !bytes.Equal(got, src) {
		t.Fatalf("xerial: %v, equal=%v", err, bytes.Equal(got, src))
	}
	if _, err := Decompress(CodecSnappy, xerialFrame(src, 32<<10), len(src)-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("xerial over limit: %v", err)
	}
	framed := xerialFrame(src, 32<<10)
	if _, err := Decompress(CodecSnappy, framed[:len(framed)-3], len(src)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated xerial: %v", err)
	}

	// A Java-produced batch: records in xerial framing.
	recs := sampleRecords()
	var raw []byte
	for i := range recs {
		raw = AppendRecord(raw, &recs[i])
	}
	b := rawBatch(int32(len(recs)), int32(len(recs)-1), xerialFrame(raw, 100))
	binary.BigEndian.PutUint16(b[attributesOffset:], uint16(CodecSnappy))
	got2, err := collect(b, 1<<20)
	if err != nil || !reflect.DeepEqual(got2, recs) {
		t.Fatalf("xerial batch: %v", err)
	}
}

func TestDecompressRoundTrip(t *testing.T) {
	inputs := [][]byte{{}, []byte("x"), bytes.Repeat([]byte("0123456789"), 100_000)}
	for _, codec := range allCodecs {
		for _, in := range inputs {
			t.Run(fmt.Sprintf("%s/%d", codec, len(in)), func(t *testing.T) {
				c, err := Compress(codec, []byte("prefix"), in)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(c, []byte("prefix")) {
					t.Fatal("dst prefix lost")
				}
				out, err := Decompress(codec, c[6:], len(in))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out, in) {
					t.Fatal("mismatch")
				}
				if len(in) > 0 {
					if _, err := Decompress(codec, c[6:], len(in)-1); !errors.Is(err, ErrTooLarge) {
						t.Fatalf("limit-1: %v", err)
					}
				}
			})
		}
	}
}

// TestIterateConcurrent exercises the pooled decoders and buffers from
// many goroutines (run with -race).
func TestIterateConcurrent(t *testing.T) {
	var batches []Batch
	for _, codec := range allCodecs {
		b, err := Build(BatchSpec{Attributes: int16(codec)}, sampleRecords())
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	want := sampleRecords()
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 50; i++ {
				b := batches[(g+i)%len(batches)]
				got, err := collect(b, 1<<20)
				if err == nil && !reflect.DeepEqual(got, want) {
					err = fmt.Errorf("%s: records differ", b.Codec())
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
