package logfs

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// The suffixes of a segment's files (Kafka's LogFileUtils), each named by
// the segment's base offset.
const (
	LogSuffix       = ".log"
	IndexSuffix     = ".index"
	TimeIndexSuffix = ".timeindex"
	TxnIndexSuffix  = ".txnindex"
	SnapshotSuffix  = ".snapshot"
)

// FileName returns the 20-digit zero-padded name Kafka gives segment,
// index and snapshot files.
func FileName(dir string, offset int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", offset, suffix))
}

// ParseFileName returns the offset of a name like 00000000000000000042.log.
func ParseFileName(name, suffix string) (int64, bool) {
	if !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	digits := strings.TrimSuffix(name, suffix)
	if len(digits) != 20 {
		return 0, false
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || off < 0 {
		return 0, false
	}
	return off, true
}
