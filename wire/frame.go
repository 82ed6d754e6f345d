package wire

import (
	"encoding/binary"
	"errors"
	"io"
	"slices"
)

// ErrFrameTooLarge means a frame's size prefix is negative or above the
// configured maximum. Kafka closes the connection in that case.
var ErrFrameTooLarge = errors.New("wire: frame larger than socket.request.max.bytes")

// ReadFrame reads one frame: a 4-byte big-endian size, then the body,
// which it returns. A size below 0 or above maxSize returns
// ErrFrameTooLarge before allocating anything, so a peer cannot make the
// broker reserve memory it never sends. It returns io.EOF only on a clean
// EOF before the size; an EOF anywhere else is io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, maxSize int32) ([]byte, error) {
	var sizeBuf [4]byte
	if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
		return nil, err // io.EOF if nothing was read, else io.ErrUnexpectedEOF
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	if size < 0 || size > maxSize {
		return nil, ErrFrameTooLarge
	}
	// Up to eagerFrameAlloc is allocated at once; past it the buffer
	// grows as bytes arrive, so a peer that announces a large frame and
	// sends nothing holds little memory.
	body := make([]byte, 0, min(int(size), eagerFrameAlloc))
	for len(body) < int(size) {
		if len(body) == cap(body) {
			body = slices.Grow(body, min(len(body), int(size)-len(body)))
		}
		n, err := io.ReadFull(r, body[len(body):min(cap(body), int(size))])
		body = body[:len(body)+n]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return body, nil
}

// eagerFrameAlloc is the largest frame buffer ReadFrame allocates before
// the bytes arrive.
const eagerFrameAlloc = 1 << 20

// AppendResponse appends a whole response frame to dst: size, correlation
// id, an empty tagged-field buffer when flexible, then body. The caller
// passes flexible=false for ApiVersions (see ResponseHeaderFlexible).
func AppendResponse(dst []byte, correlationID int32, flexible bool, body []byte) []byte {
	size := 4 + len(body)
	if flexible {
		size++
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if flexible {
		dst = append(dst, 0) // no tagged fields
	}
	return append(dst, body...)
}
