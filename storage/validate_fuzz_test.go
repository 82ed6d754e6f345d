package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kbroker/kbroker/wire/record"
)

// FuzzValidateForAppend runs arbitrary client batches through the
// leader's validation (validateClientBatch, then validateForAppend) for
// each compression.type, as AppendAsLeader does. Whatever the bytes: no
// panic; a refusal wraps a sentinel the produce handler maps to a Kafka
// error code; an accepted batch is one a reader accepts, with a valid
// CRC and the same record count, and is the very same bytes when the
// codec is kept.
//
// The seed corpus under testdata/fuzz/FuzzValidateForAppend is batches of
// every codec; regenerate it with
//
//	KB_WRITE_FUZZ_CORPUS=1 go test -run TestWriteValidateFuzzCorpus ./storage
func FuzzValidateForAppend(f *testing.F) {
	for _, s := range validateSeeds(f) {
		f.Add(s.data, s.compression)
	}
	types := []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"}
	now := time.UnixMilli(testNow)
	f.Fuzz(func(t *testing.T, data []byte, compression uint8) {
		// Most mutations break the base offset (0 from a client),
		// batchLength or the CRC, which are checked first; repair them
		// (on even lengths) so that the mutations reach the records.
		if len(data) >= record.HeaderSize && len(data)%2 == 0 {
			binary.BigEndian.PutUint64(data[0:], 0)
			binary.BigEndian.PutUint32(data[8:], uint32(len(data)-record.LogOverhead))
			record.Batch(data).SetCRC()
		}
		cfg := DefaultLogConfig()
		cfg.MaxMessageBytes = 1 << 20
		cfg.CompressionType = types[int(compression)%len(types)]
		l := &Log{}
		l.cfg.Store(&cfg)
		b := record.Batch(data)
		if err := l.validateClientBatch(b); err != nil {
			checkSentinel(t, err)
			return
		}
		got, _, err := validateForAppend(b, &cfg, now)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		if !got.ValidCRC() || got.RecordCount() != b.RecordCount() {
			t.Fatalf("accepted batch: CRC valid %v, %d records of %d", got.ValidCRC(), got.RecordCount(), b.RecordCount())
		}
		if err := record.Validate(got, decompressionLimit(cfg.MaxMessageBytes)); err != nil {
			t.Fatalf("accepted batch does not read back: %v", err)
		}
		if got.Codec() == b.Codec() && &got[0] != &b[0] {
			t.Fatal("a batch that keeps its codec was copied")
		}
	})
}

// checkSentinel fails unless err wraps an error the produce path maps to a
// Kafka error code.
func checkSentinel(t *testing.T, err error) {
	t.Helper()
	for _, s := range []error{ErrCorrupt, ErrInvalidRecord, ErrMessageTooLarge, ErrInvalidTimestamp,
		record.ErrCorrupt, record.ErrInvalid, record.ErrMagic, record.ErrTruncated} {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error wraps no sentinel: %v", err)
}

type validateSeed struct {
	name        string
	data        []byte
	compression uint8
}

func validateSeeds(tb testing.TB) []validateSeed {
	var seeds []validateSeed
	for i, codec := range []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		b, err := record.Build(record.BatchSpec{Attributes: int16(codec), BaseTimestamp: testNow, PartitionLeaderEpoch: -1,
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, []record.Record{
			{Value: []byte("v0")},
			{OffsetDelta: 1, TimestampDelta: 3, Key: []byte("k"), Value: []byte("value"), Headers: []record.Header{{Key: "h", Value: nil}}},
		})
		if err != nil {
			tb.Fatal(err)
		}
		// Keep the codec, and recompress to the next one.
		seeds = append(seeds,
			validateSeed{codec.String() + "-producer", b, 0},
			validateSeed{fmt.Sprintf("%s-to-%d", codec, (i+1)%5+1), b, uint8((i+1)%5 + 1)})
	}
	seeds = append(seeds, validateSeed{"zstd-declared-bomb", zstdDeclaredBomb(), 0})
	return seeds
}

// TestWriteValidateFuzzCorpus writes the seed corpus in Go's corpus file
// format.
func TestWriteValidateFuzzCorpus(t *testing.T) {
	if os.Getenv("KB_WRITE_FUZZ_CORPUS") == "" {
		t.Skip("set KB_WRITE_FUZZ_CORPUS=1 to regenerate testdata/fuzz")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzValidateForAppend")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range validateSeeds(t) {
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nbyte(%d)\n", s.data, s.compression)
		if err := os.WriteFile(filepath.Join(dir, s.name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
