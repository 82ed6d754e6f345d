package record

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// MaxDecompressedBatchBytes is the absolute ceiling on how many bytes one
// batch's records may decompress to, whatever limit a caller passes. A
// leader's limit is 64 × max.message.bytes (64 MiB at the default) capped
// by this; max.message.bytes itself is at most socket.request.max.bytes
// (100 MiB by default), so no batch a client can send is refused here
// for its size alone unless it expands more than 1.28×.
const MaxDecompressedBatchBytes = 128 << 20

// DecompressionBudget is the process-wide bound on the memory held by
// decompressions in progress: each one takes its share (see weight)
// before it starts and returns it when done; decompressions past the
// budget wait. With streaming validation a share is small (the decoder's
// window and a scan buffer), so the budget limits how many bombs run at
// once, not how many ordinary batches do: 256 MiB admits about thirty
// zstd validations (8.5 MiB each) at a time.
const DecompressionBudget = 256 << 20

var budget = semaphore.NewWeighted(DecompressionBudget)

// scanBuffer is the window a record scan reads the decompressed stream
// through: records larger than it are skipped through it, not held.
const scanBuffer = 32 << 10

// acquire takes n bytes of the budget (at most all of it), waiting for
// decompressions in progress to finish. They are CPU-bound and bounded by
// their limit, so the wait ends; there is no caller context to honour
// (validation runs inside a produce whose deadline is enforced around it).
func acquire(n int64) func() {
	n = min(max(n, 1), DecompressionBudget)
	_ = budget.Acquire(context.Background(), n) // never fails without a deadline
	return func() { budget.Release(n) }
}

// decoderWeight is the memory codec's decoder may hold for src, beyond
// the output it hands out: bounded by the format (gzip's 32 KiB window,
// lz4's blocks of at most 4 MiB), by zstdMaxWindow, or for snappy by the
// largest block's possible expansion.
func decoderWeight(codec Codec, src []byte, limit int) int64 {
	switch codec {
	case CodecGzip:
		return 64 << 10
	case CodecLZ4:
		return 2 * (4 << 20)
	case CodecZstd:
		return zstdBudget
	case CodecSnappy:
		return min(snappyBudget(src), int64(limit))
	}
	return 0
}

// expansionBound is the most src can decompress to with codec, from the
// formats' densest encodings: deflate 1032:1, an lz4 sequence 255:1 (plus
// a block), a snappy copy 64 bytes for 3, a 4-byte zstd RLE block 128 KiB.
// It lets a small batch take a small share of the budget.
func expansionBound(codec Codec, src []byte) int64 {
	n := int64(len(src))
	switch codec {
	case CodecGzip:
		return 1032*n + 64
	case CodecLZ4:
		return 255*n + 4<<20
	case CodecSnappy:
		return snappyMaxExpansion * n
	case CodecZstd:
		return 32768*n + 128<<10
	}
	return n
}
