package integrity

import (
	"bufio"
	"fmt"
	"io"

	"github.com/kbroker/kbroker/wire/record"
)

// Scanner reads whole batches sequentially from [start, end) of a
// segment file. The batch it returns is valid until the next call.
type Scanner struct {
	r   *bufio.Reader
	pos int64 // position of the next batch
	end int64
	buf []byte
	err error // why the scan stopped before end; nil at a clean end
}

// NewScanner scans [start, end) of f.
func NewScanner(f io.ReaderAt, start, end int64) *Scanner {
	return &Scanner{
		r:   bufio.NewReaderSize(io.NewSectionReader(f, start, end-start), 64<<10),
		pos: start,
		end: end,
	}
}

// Err is why the scan stopped before its end: an error wrapping
// ErrCorrupt for a batch that cannot be one, ErrStorage for a failed
// read; nil at a clean end.
func (s *Scanner) Err() error { return s.err }

// Next returns the batch at the scan position and its position. It stops
// (false) at the end or at the first batch that is truncated, sized past
// the end or of a magic other than 2, leaving the reason in Err. It does
// not check the CRC (Check does).
func (s *Scanner) Next() (record.Batch, int64, bool) {
	if s.err != nil || s.pos >= s.end {
		return nil, s.pos, false
	}
	remaining := s.end - s.pos
	if remaining < record.HeaderSize {
		s.err = fmt.Errorf("%w: %d trailing bytes at %d", ErrCorrupt, remaining, s.pos)
		return nil, s.pos, false
	}
	if cap(s.buf) < record.HeaderSize {
		s.buf = make([]byte, record.HeaderSize, 16<<10)
	}
	s.buf = s.buf[:record.HeaderSize]
	if _, err := io.ReadFull(s.r, s.buf); err != nil {
		s.err = fmt.Errorf("%w: reading header at %d: %v", ErrStorage, s.pos, err)
		return nil, s.pos, false
	}
	size, err := record.PeekSize(s.buf)
	if err != nil {
		s.err = fmt.Errorf("batch at %d: %w", s.pos, err)
		return nil, s.pos, false
	}
	if int64(size) > remaining || size < record.HeaderSize {
		s.err = fmt.Errorf("%w: batch at %d of size %d exceeds the %d bytes left", ErrCorrupt, s.pos, size, remaining)
		return nil, s.pos, false
	}
	if m := s.buf[16]; m != record.MagicV2 {
		s.err = fmt.Errorf("%w: batch at %d has magic %d", ErrCorrupt, s.pos, m)
		return nil, s.pos, false
	}
	if cap(s.buf) < size {
		nb := make([]byte, size)
		copy(nb, s.buf)
		s.buf = nb
	}
	s.buf = s.buf[:size]
	if _, err := io.ReadFull(s.r, s.buf[record.HeaderSize:]); err != nil {
		s.err = fmt.Errorf("%w: reading batch at %d: %v", ErrStorage, s.pos, err)
		return nil, s.pos, false
	}
	pos := s.pos
	s.pos += int64(size)
	return record.Batch(s.buf), pos, true
}
