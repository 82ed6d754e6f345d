package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// API keys whose header rules are special.
const (
	apiKeyControlledShutdown = 7
	apiKeyApiVersions        = 18
)

// ErrTruncatedHeader means a request frame ended inside its header.
var ErrTruncatedHeader = errors.New("wire: truncated request header")

// ErrBadHeader means a request header is malformed (a negative client id
// length other than -1, a bad varint, out-of-order tags).
var ErrBadHeader = errors.New("wire: malformed request header")

// RequestHeader is a decoded request header (v0, v1 or v2).
type RequestHeader struct {
	APIKey, APIVersion int16
	CorrelationID      int32
	ClientID           *string
	Flexible           bool // header v2 (tagged fields present) — true when kmsg says the request (key, version) is flexible
}

// firstFlexible maps an API key to the first version kmsg marks flexible,
// or -1 when none is. kmsg's IsFlexible is "version >= N" for every
// request, so one number per key answers for every version; computing it
// once saves allocating a kmsg request per frame.
var firstFlexible = sync.OnceValue(func() map[int16]int16 {
	m := make(map[int16]int16)
	for key := int16(0); key < 1024; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		m[key] = -1
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			if req.IsFlexible() {
				m[key] = v
				break
			}
		}
	}
	return m
})

// IsFlexible reports whether kmsg encodes (key, version) as flexible
// (compact strings, tagged fields). Unknown keys are not flexible.
func IsFlexible(key, version int16) bool {
	first, ok := firstFlexible()[key]
	return ok && first >= 0 && version >= first
}

// ResponseHeaderFlexible reports whether the response to (key, version)
// carries tagged fields in its header: when the request is flexible,
// except ApiVersions, whose response header is always v0.
func ResponseHeaderFlexible(key, version int16) bool {
	return key != apiKeyApiVersions && IsFlexible(key, version)
}

// ParseRequestHeader decodes the request header at the start of frame (a
// frame body as ReadFrame returns it) and returns the body after it.
// Header v2 is used when the key and version are flexible per kmsg, v0
// for ControlledShutdown v0 (no client id), v1 otherwise, including for
// unknown API keys so that their correlation id can be answered.
func ParseRequestHeader(frame []byte) (RequestHeader, []byte, error) {
	var h RequestHeader
	if len(frame) < 8 {
		return h, nil, ErrTruncatedHeader
	}
	h.APIKey = int16(binary.BigEndian.Uint16(frame[0:]))
	h.APIVersion = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	rest := frame[8:]

	if h.APIKey == apiKeyControlledShutdown && h.APIVersion == 0 {
		return h, rest, nil
	}

	// The client id is a classic nullable string even in header v2.
	if len(rest) < 2 {
		return h, nil, ErrTruncatedHeader
	}
	n := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	switch {
	case n == -1:
	case n < 0:
		return h, nil, fmt.Errorf("%w: client id length %d", ErrBadHeader, n)
	case int(n) > len(rest):
		return h, nil, ErrTruncatedHeader
	default:
		id := string(rest[:n])
		h.ClientID = &id
		rest = rest[n:]
	}

	h.Flexible = IsFlexible(h.APIKey, h.APIVersion)
	if !h.Flexible {
		return h, rest, nil
	}
	rest, err := skipTags(rest)
	if err != nil {
		return h, nil, err
	}
	return h, rest, nil
}

// skipTags skips a tagged-field section: a count, then per field a tag, a
// size and the data, all unsigned varints. No request header tag is
// defined, so all are skipped; like Kafka, tags must be strictly
// increasing.
func skipTags(b []byte) ([]byte, error) {
	count, b, err := uvarint32(b)
	if err != nil {
		return nil, err
	}
	prev := int64(-1)
	for i := uint32(0); i < count; i++ {
		var tag, size uint32
		if tag, b, err = uvarint32(b); err != nil {
			return nil, err
		}
		if int64(tag) <= prev {
			return nil, fmt.Errorf("%w: tag %d after %d", ErrBadHeader, tag, prev)
		}
		prev = int64(tag)
		if size, b, err = uvarint32(b); err != nil {
			return nil, err
		}
		if uint64(size) > uint64(len(b)) {
			return nil, ErrTruncatedHeader
		}
		b = b[size:]
	}
	return b, nil
}

// uvarint32 reads an unsigned varint of at most 5 bytes that fits 32 bits.
func uvarint32(b []byte) (uint32, []byte, error) {
	v, n := binary.Uvarint(b)
	switch {
	case n == 0:
		return 0, nil, ErrTruncatedHeader
	case n < 0 || n > binary.MaxVarintLen32 || v > 1<<32-1:
		return 0, nil, fmt.Errorf("%w: bad varint", ErrBadHeader)
	}
	return uint32(v), b[n:], nil
}
