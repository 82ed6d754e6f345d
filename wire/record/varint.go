package record

import (
	"encoding/binary"
	"math"
)

// Kafka's record fields use zigzag varints: "varint" for int32 values (at
// most 5 bytes) and "varlong" for int64 values (at most 10 bytes). Java's
// ByteUtils rejects longer encodings, so we do too.

// readVarint decodes a zigzag varint that must fit an int32. n <= 0 means
// the bytes are truncated, too long, or out of range.
func readVarint(b []byte) (v int32, n int) {
	x, n := binary.Varint(b)
	if n <= 0 || n > binary.MaxVarintLen32 || x < math.MinInt32 || x > math.MaxInt32 {
		return 0, -1
	}
	return int32(x), n
}

// readVarlong decodes a zigzag varint int64.
func readVarlong(b []byte) (v int64, n int) {
	x, n := binary.Varint(b)
	if n <= 0 {
		return 0, -1
	}
	return x, n
}

// varintSize is the number of bytes binary.AppendVarint writes for v.
func varintSize(v int64) int {
	ux := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for ux >= 0x80 {
		ux >>= 7
		n++
	}
	return n
}

// bytesSize is the encoded size of a nullable byte field (length + data).
func bytesSize(b []byte) int {
	if b == nil {
		return varintSize(-1)
	}
	return varintSize(int64(len(b))) + len(b)
}

// appendBytes appends a nullable byte field: nil is length -1.
func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}
