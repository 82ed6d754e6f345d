package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The seed corpora under testdata/fuzz are batches built by Build for
// every codec, a franz-go (kmsg) encoded batch and a Java-style xerial
// snappy batch; regenerate them with
//
//	KB_WRITE_FUZZ_CORPUS=1 go test -run TestWriteFuzzCorpus ./wire/record

const fuzzLimit = 1 << 20

// fuzzRecords are small, so that the fuzzer's mutations reach every field.
func fuzzRecords() []Record {
	return []Record{
		{Key: nil, Value: []byte("v0")},
		{OffsetDelta: 1, TimestampDelta: 7, Key: []byte{}, Value: nil},
		{OffsetDelta: 2, TimestampDelta: -1, Key: []byte("key"), Value: bytes.Repeat([]byte("ab"), 40),
			Headers: []Header{{Key: "h", Value: []byte("hv")}, {Key: "n", Value: nil}}},
	}
}

func seedBatches(t testing.TB) map[string][]byte {
	seeds := make(map[string][]byte)
	for _, codec := range allCodecs {
		b, err := Build(BatchSpec{Attributes: int16(codec), BaseTimestamp: 1_700_000_000_000, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, fuzzRecords())
		if err != nil {
			t.Fatal(err)
		}
		seeds["build-"+codec.String()] = b
		seeds["kmsg-"+codec.String()] = kmsgBatch(t, codec, fuzzRecords())
	}
	var raw []byte
	for _, r := range fuzzRecords() {
		raw = AppendRecord(raw, &r)
	}
	x := rawBatch(3, 2, xerialFrame(raw, 64))
	binary.BigEndian.PutUint16(x[attributesOffset:], uint16(CodecSnappy))
	x.SetCRC()
	seeds["xerial-snappy"] = x
	return seeds
}

func seedCompressed(t testing.TB) map[string][2]any {
	src := []byte("kbroker kbroker kbroker: a Kafka-protocol broker in Go, kbroker kbroker")
	seeds := make(map[string][2]any)
	for _, codec := range allCodecs {
		c, err := Compress(codec, nil, src)
		if err != nil {
			t.Fatal(err)
		}
		seeds[codec.String()] = [2]any{byte(codec), c}
	}
	seeds["snappy-xerial"] = [2]any{byte(CodecSnappy), xerialFrame(src, 16)}
	seeds["zstd-stream"] = [2]any{byte(CodecZstd), zstdStreamEncode(t, src)}
	return seeds
}

func FuzzIterate(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Most mutations break batchLength, which Parse checks first;
		// repair it so that the mutations reach the records.
		if len(data) >= HeaderSize && len(data)%2 == 0 {
			binary.BigEndian.PutUint32(data[batchLengthOffset:], uint32(len(data)-LogOverhead))
		}
		b, _, err := Parse(data)
		if err != nil {
			return
		}
		got, err := collect(b, fuzzLimit)
		checkScanAgrees(t, b, got, err)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		// Whatever parses must survive a rebuild unchanged.
		rebuilt, err := Build(BatchSpec{Attributes: b.Attributes()}, got)
		if err != nil {
			t.Fatal(err)
		}
		again, err := collect(rebuilt, 2*fuzzLimit)
		if err != nil {
			t.Fatalf("rebuilt batch: %v", err)
		}
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("rebuilt records differ:\n%+v\n%+v", got, again)
		}
	})
}

// checkScanAgrees: Scan accepts exactly what Iterate accepts and reports
// the same deltas.
func checkScanAgrees(t *testing.T, b Batch, got []Record, iterErr error) {
	var deltas [][2]int64
	scanErr := Scan(b, fuzzLimit, func(r *Record) error {
		if r.Key != nil || r.Value != nil || r.Headers != nil {
			t.Fatal("Scan handed out record contents")
		}
		deltas = append(deltas, [2]int64{r.TimestampDelta, int64(r.OffsetDelta)})
		return nil
	})
	if (iterErr == nil) != (scanErr == nil) {
		t.Fatalf("Iterate: %v; Scan: %v", iterErr, scanErr)
	}
	if iterErr != nil {
		// A batch wrong in two ways may be refused for either: Scan
		// reads a record field by field, Iterate reads it whole first.
		if !errors.Is(scanErr, ErrCorrupt) && !errors.Is(scanErr, ErrInvalid) && !errors.Is(scanErr, ErrTooLarge) && !errors.Is(scanErr, ErrMagic) {
			t.Fatalf("Scan error wraps no sentinel: %v", scanErr)
		}
		return
	}
	for i, r := range got {
		if deltas[i] != [2]int64{r.TimestampDelta, int64(r.OffsetDelta)} {
			t.Fatalf("record %d: Scan deltas %v, Iterate %d/%d", i, deltas[i], r.TimestampDelta, r.OffsetDelta)
		}
	}
}

func FuzzDecompress(f *testing.F) {
	for _, s := range seedCompressed(f) {
		f.Add(s[0].(byte), s[1].([]byte))
	}
	f.Fuzz(func(t *testing.T, codecByte byte, src []byte) {
		codec := Codec(codecByte & CompressionMask)
		out, err := Decompress(codec, src, fuzzLimit)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if len(out) > fuzzLimit {
			t.Fatalf("%d bytes past the limit", len(out))
		}
		c, err := Compress(codec, nil, out)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decompress(codec, c, len(out))
		if err != nil || !bytes.Equal(back, out) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// TestWriteFuzzCorpus writes the seed corpora in Go's corpus file format.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("KB_WRITE_FUZZ_CORPUS") == "" {
		t.Skip("set KB_WRITE_FUZZ_CORPUS=1 to regenerate testdata/fuzz")
	}
	for name, b := range seedBatches(t) {
		writeCorpus(t, "FuzzIterate", name, fmt.Sprintf("[]byte(%q)", b))
	}
	for name, s := range seedCompressed(t) {
		writeCorpus(t, "FuzzDecompress", name, fmt.Sprintf("byte(%d)", s[0].(byte)), fmt.Sprintf("[]byte(%q)", s[1].([]byte)))
	}
}

func writeCorpus(t *testing.T, fuzzName, name string, values ...string) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", fuzzName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	content := "go test fuzz v1\n"
	for _, v := range values {
		content += v + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
