package storage

import (
	"fmt"

	"github.com/kbroker/kbroker/storage/logfs"
)

// preallocate is preallocate=true for a new active segment: its .log is
// given segment.bytes up front (fallocate where the platform and file
// system have it, else a sparse truncate), as Kafka's FileRecords does,
// so the file system can lay it out in one piece. s.size stays the bytes
// written; the zeroes after them are trimmed when the segment is rolled
// or closed, and recovery after a crash treats them as the end of the
// log (a zero batch length is not a batch).
func (l *Log) preallocateLocked(s *segment) error {
	cfg := l.config()
	if !cfg.Preallocate || s.size != 0 || cfg.SegmentBytes <= 0 {
		return nil
	}
	if err := logfs.Allocate(s.log, cfg.SegmentBytes); err != nil {
		return fmt.Errorf("%w: preallocate segment %d of %s to %d bytes: %v", ErrStorage, s.base, l.Dir(), cfg.SegmentBytes, err)
	}
	s.preallocated = true
	return nil
}

// trim cuts a preallocated segment's .log back to the bytes written
// (Kafka trims a segment when it becomes inactive and when it is closed).
func (s *segment) trim() error {
	if !s.preallocated {
		return nil
	}
	if err := s.log.Truncate(s.size); err != nil {
		return fmt.Errorf("%w: trim preallocated segment %d: %v", ErrStorage, s.base, err)
	}
	s.preallocated = false
	return nil
}
