package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kbroker/kbroker/internal/cliflag"
	"github.com/kbroker/kbroker/wire/record"
)

// dumpOptions select what dumpLog prints, after kafka-dump-log.sh's flags.
type dumpOptions struct {
	// DeepIteration prints one line per record after each batch line.
	DeepIteration bool
	// PrintData adds each record's key and payload (implies DeepIteration).
	PrintData bool
	// MaxUncompressed bounds how far one compressed batch may expand when
	// its records are decoded; 0 means defaultDumpMaxUncompressed.
	MaxUncompressed int
	// Warn receives diagnostics that Kafka's tool does not print on
	// stdout (why a tail is invalid, undecodable records). May be nil.
	Warn io.Writer
}

const defaultDumpMaxUncompressed = 1 << 30

// errUnsupportedFile is returned by dumpLog for a file type it cannot
// decode (producer snapshots, checkpoints, ...).
var errUnsupportedFile = errors.New("unsupported file type (dump-log reads .log, .index and .timeindex files)")

const dumpLogUsage = `usage: kbroker dump-log [--deep-iteration] [--print-data-log] FILE...

Decodes segment files (.log), offset indexes (.index) and time indexes
(.timeindex) the way kafka-dump-log.sh does, with the same output format.
Flags may come before or after the files; --files a,b is accepted too.`

// dumpLogCmd is the dump-log command: it dumps every file to stdout and
// returns 0, or 1 if any file could not be read or is not supported, or 2
// on bad usage.
func dumpLogCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dump-log", flag.ContinueOnError)
	fs.SetOutput(stderr)
	deep := fs.Bool("deep-iteration", false, "print one line per record, not just per batch")
	printData := fs.Bool("print-data-log", false, "print record keys and payloads (implies --deep-iteration)")
	var fileFlags cliflag.StringList
	fs.Var(&fileFlags, "files", "comma-separated files to dump, as kafka-dump-log.sh takes them (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, dumpLogUsage)
		fs.PrintDefaults()
	}

	// Allow flags anywhere among the files, as Kafka's option parser does.
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	for _, f := range fileFlags {
		for _, p := range strings.Split(f, ",") {
			if p != "" {
				files = append(files, p)
			}
		}
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "kbroker dump-log: no files given")
		fs.Usage()
		return 2
	}

	opts := dumpOptions{DeepIteration: *deep || *printData, PrintData: *printData, Warn: stderr}
	out := bufio.NewWriterSize(stdout, 64<<10)
	code := 0
	for _, path := range files {
		err := dumpLog(out, path, opts)
		if ferr := out.Flush(); ferr != nil {
			fmt.Fprintf(stderr, "kbroker dump-log: %v\n", ferr)
			return 1
		}
		if err != nil {
			fmt.Fprintf(stderr, "kbroker dump-log: %s: %v\n", path, err)
			code = 1
		}
	}
	return code
}

// dumpLog prints "Dumping <path>" and then the decoded contents of one
// file, chosen by its suffix. Corrupt or truncated contents are reported
// in the output and are not an error; an unreadable or unsupported file
// is.
func dumpLog(w io.Writer, path string, opts dumpOptions) error {
	if _, err := fmt.Fprintf(w, "Dumping %s\n", path); err != nil {
		return err
	}
	name := filepath.Base(path)
	switch {
	case strings.HasSuffix(name, ".log"):
		return dumpSegment(w, path, opts)
	case strings.HasSuffix(name, ".index"):
		return dumpOffsetIndex(w, path)
	case strings.HasSuffix(name, ".timeindex"):
		return dumpTimeIndex(w, path)
	default:
		return errUnsupportedFile
	}
}

// baseOffsetFromName parses the offset that names a segment file, e.g. 42
// for 00000000000000000042.log, the way Kafka does (all before the first
// dot).
func baseOffsetFromName(path string) (int64, error) {
	name := filepath.Base(path)
	digits, _, _ := strings.Cut(name, ".")
	off, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || off < 0 {
		return 0, fmt.Errorf("cannot take a base offset from file name %q (want e.g. 00000000000000000000.log)", name)
	}
	return off, nil
}

func (o dumpOptions) warnf(format string, args ...any) {
	if o.Warn != nil {
		fmt.Fprintf(o.Warn, format+"\n", args...)
	}
}

// dumpSegment prints a .log file batch by batch.
func dumpSegment(w io.Writer, path string, opts dumpOptions) error {
	base, err := baseOffsetFromName(path)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	fileSize := fi.Size()
	if _, err := fmt.Fprintf(w, "Log starting offset: %d\n", base); err != nil {
		return err
	}
	if opts.PrintData {
		opts.DeepIteration = true
	}
	if opts.MaxUncompressed <= 0 {
		opts.MaxUncompressed = defaultDumpMaxUncompressed
	}

	r := bufio.NewReaderSize(f, 1<<20)
	var buf []byte
	var pos int64
	for pos < fileSize {
		remaining := fileSize - pos
		if remaining < record.LogOverhead {
			opts.warnf("%s: %d bytes at position %d are too few for a batch header", path, remaining, pos)
			break
		}
		head, err := r.Peek(record.LogOverhead)
		if err != nil {
			return fmt.Errorf("read at position %d: %w", pos, err)
		}
		size, err := record.PeekSize(head)
		if err != nil {
			opts.warnf("%s: position %d: %v", path, pos, err)
			break
		}
		if int64(size) > remaining {
			opts.warnf("%s: batch at position %d claims %d bytes but only %d remain", path, pos, size, remaining)
			break
		}
		if cap(buf) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("read at position %d: %w", pos, err)
		}
		b, _, err := record.Parse(buf)
		if err != nil {
			opts.warnf("%s: position %d: %v", path, pos, err)
			break
		}
		if err := printBatch(w, b, pos, opts, path); err != nil {
			return err
		}
		pos += int64(size)
	}
	if trailing := fileSize - pos; trailing > 0 {
		if _, err := fmt.Fprintf(w, "Found %d invalid bytes at the end of %s\n", trailing, filepath.Base(path)); err != nil {
			return err
		}
	}
	return nil
}

func timestampType(b record.Batch) string {
	if b.LogAppendTime() {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// printBatch prints one batch line (and with DeepIteration its records),
// field for field as Kafka's DumpLogSegments.
func printBatch(w io.Writer, b record.Batch, pos int64, opts dumpOptions, path string) error {
	deleteHorizon := "OptionalLong.empty"
	if b.Attributes()&record.DeleteHorizonFlag != 0 {
		deleteHorizon = fmt.Sprintf("OptionalLong[%d]", b.BaseTimestamp())
	}
	// Kafka's isValid: the batch holds a whole header and its CRC matches.
	valid := len(b) >= record.HeaderSize && b.ValidCRC()
	tsType := timestampType(b)
	if _, err := fmt.Fprintf(w, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: %s position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
		b.BaseOffset(), b.LastOffset(), b.RecordCount(), b.BaseSequence(), b.LastSequence(),
		b.ProducerID(), b.ProducerEpoch(), b.PartitionLeaderEpoch(), b.IsTransactional(), b.IsControl(),
		deleteHorizon, pos, tsType, b.MaxTimestamp(), len(b), b.Magic(), b.Codec(), b.CRC(), valid); err != nil {
		return err
	}
	if !opts.DeepIteration {
		return nil
	}

	var line []byte
	var werr error
	err := record.IterateCompacted(b, opts.MaxUncompressed, func(r *record.Record) error {
		ts := b.BaseTimestamp() + r.TimestampDelta
		if b.LogAppendTime() {
			ts = b.MaxTimestamp() // Kafka reports the batch's append time for every record
		}
		seq := int32(record.NoSequence)
		if bs := b.BaseSequence(); bs >= 0 {
			seq = record.IncrementSequence(bs, r.OffsetDelta)
		}
		line = fmt.Appendf(line[:0], "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [",
			b.BaseOffset()+int64(r.OffsetDelta), tsType, ts, bytesLen(r.Key), bytesLen(r.Value), seq)
		for i, h := range r.Headers {
			if i > 0 {
				line = append(line, ',')
			}
			line = append(line, h.Key...)
		}
		line = append(line, ']')
		switch {
		case b.IsControl():
			line = appendControlRecord(line, r)
		case opts.PrintData:
			if r.Key != nil {
				line = append(line, " key: "...)
				line = appendUTF8(line, r.Key)
			}
			if r.Value != nil {
				line = append(line, " payload: "...)
				line = appendUTF8(line, r.Value)
			}
		}
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			werr = err
			return err
		}
		return nil
	})
	if werr != nil {
		return werr
	}
	if err != nil {
		// Kafka's tool would stop with an exception here; report the batch
		// and go on with the next one.
		opts.warnf("%s: batch at position %d: cannot decode records: %v", path, pos, err)
	}
	return nil
}

func bytesLen(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// appendUTF8 appends b decoded as UTF-8, with invalid sequences replaced
// by U+FFFD as Java's String decoder does.
func appendUTF8(dst, b []byte) []byte {
	if utf8.Valid(b) {
		return append(dst, b...)
	}
	return append(dst, strings.ToValidUTF8(string(b), "\uFFFD")...)
}

// controlTypes names Kafka's ControlRecordType ids.
var controlTypes = map[int16]string{
	0: "ABORT",
	1: "COMMIT",
	2: "LEADER_CHANGE",
	3: "SNAPSHOT_HEADER",
	4: "SNAPSHOT_FOOTER",
	5: "KRAFT_VERSION",
	6: "KRAFT_VOTERS",
}

// appendControlRecord describes a control record the way Kafka's tool
// does: the end-transaction marker of a COMMIT or ABORT, otherwise the
// control type.
func appendControlRecord(dst []byte, r *record.Record) []byte {
	if len(r.Key) < 4 {
		return append(dst, " controlType: UNKNOWN(-1)"...)
	}
	typ := int16(binary.BigEndian.Uint16(r.Key[2:]))
	name, ok := controlTypes[typ]
	if !ok {
		name = "UNKNOWN"
	}
	if (typ == 0 || typ == 1) && len(r.Value) >= 6 {
		epoch := int32(binary.BigEndian.Uint32(r.Value[2:]))
		return fmt.Appendf(dst, " endTxnMarker: %s coordinatorEpoch: %d", name, epoch)
	}
	return fmt.Appendf(dst, " controlType: %s(%d)", name, typ)
}

// dumpOffsetIndex prints a .index file: 8-byte entries of relative offset
// and position.
func dumpOffsetIndex(w io.Writer, path string) error {
	return dumpEntries(w, path, 8, func(base int64, e []byte) (int64, string) {
		off := base + int64(int32(binary.BigEndian.Uint32(e)))
		pos := int32(binary.BigEndian.Uint32(e[4:]))
		return off, fmt.Sprintf("offset: %d position: %d\n", off, pos)
	})
}

// dumpTimeIndex prints a .timeindex file: 12-byte entries of timestamp
// and relative offset.
func dumpTimeIndex(w io.Writer, path string) error {
	return dumpEntries(w, path, 12, func(base int64, e []byte) (int64, string) {
		ts := int64(binary.BigEndian.Uint64(e))
		off := base + int64(int32(binary.BigEndian.Uint32(e[8:])))
		return off, fmt.Sprintf("timestamp: %d offset: %d\n", ts, off)
	})
}

// dumpEntries prints the fixed-size entries of an index file. Like Kafka
// it stops at the first entry after the first that points at the base
// offset: the index is preallocated and zero-filled past its last entry.
func dumpEntries(w io.Writer, path string, entrySize int, format func(base int64, e []byte) (int64, string)) error {
	base, err := baseOffsetFromName(path)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	n := len(data) / entrySize
	for i := range n {
		off, line := format(base, data[i*entrySize:(i+1)*entrySize])
		if i > 0 && off == base {
			return nil
		}
		if _, err := io.WriteString(w, line); err != nil {
			return err
		}
	}
	if trailing := len(data) - n*entrySize; trailing > 0 {
		_, err := fmt.Fprintf(w, "Found %d invalid bytes at the end of %s\n", trailing, filepath.Base(path))
		return err
	}
	return nil
}
