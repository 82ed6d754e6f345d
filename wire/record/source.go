package record

import (
	"errors"
	"io"
)

// recordSource is the records section of a batch as Iterate and Scan read
// it: in place for an uncompressed batch (r == nil, buf is the data), or
// read from a decompression stream through buf, a window that grows (by
// doubling) only when it is full of data that has arrived and a record
// needs more of it. A length the data declares never sizes it.
type recordSource struct {
	r          io.Reader // nil: buf holds all the data
	codec      Codec     // for error messages
	buf        []byte
	start, end int   // unread bytes: buf[start:end]
	max        int   // the most buf grows to: the stream's limit and a probe byte
	err        error // why r stopped: io.EOF at the end of the data
}

// fill makes n bytes available in window, reading more when streaming.
// It returns false when the data ends (or the stream fails) first; short
// then tells why.
func (s *recordSource) fill(n int) bool {
	for s.end-s.start < n {
		if s.err != nil {
			return false
		}
		if s.end == len(s.buf) {
			if s.start > 0 {
				// Move the unread bytes to the front before growing.
				s.end = copy(s.buf, s.buf[s.start:s.end])
				s.start = 0
			} else {
				// Full of data that has arrived: double, but never
				// past what the stream's limit lets arrive.
				grown := make([]byte, min(max(2*len(s.buf), 4096), s.max))
				s.end = copy(grown, s.buf[s.start:s.end])
				s.buf, s.start = grown, 0
				if s.end == len(s.buf) {
					return false // at the limit; the stream reports it
				}
			}
			continue
		}
		m, err := s.r.Read(s.buf[s.end:])
		s.end += m
		if err != nil {
			s.err = err
		}
	}
	return true
}

// window is the bytes available now.
func (s *recordSource) window() []byte { return s.buf[s.start:s.end] }

// buffered is how many bytes are available now.
func (s *recordSource) buffered() int { return s.end - s.start }

// advance consumes n available bytes.
func (s *recordSource) advance(n int) { s.start += n }

// skip consumes n bytes without keeping them, a window at a time.
func (s *recordSource) skip(n int) bool {
	for n > 0 {
		if s.start == s.end {
			if s.r != nil {
				// Reuse the whole window: nothing unread is kept.
				s.start, s.end = 0, 0
			}
			if !s.fill(1) {
				return false
			}
		}
		k := min(n, s.end-s.start)
		s.start += k
		n -= k
	}
	return true
}

// short returns the stream's own error when it failed (corrupt input or
// past the limit), which explains a shortage better than err does, and err
// when the data simply ended.
func (s *recordSource) short(err error) error {
	if s.err != nil && !errors.Is(s.err, io.EOF) {
		return decodeError(s.codec, s.err)
	}
	return err
}
