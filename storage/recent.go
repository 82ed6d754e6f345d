package storage

// recentBatches remembers where the last batches appended to the active
// segment start. Followers and tailing consumers read at or near the log
// end, and without it every such read paid the offset index's binary
// search (one file read per probe) and a header read per batch scanned
// from the indexed position, all under Log.mu, on the acks=all path.
//
// It holds the last recentBatchesCap batches of the segment in append
// order, with nothing between them, so the first one whose last offset is
// at or past an offset is the batch holding it (or the first after it, in
// a compacted log). Only appends add to it; anything that rewrites the
// segment (truncation, recovery) drops it, as does a roll (the segment is
// no longer where the tail is read).
type recentBatches struct {
	n, next int // entries held; ring index of the next one
	e       [recentBatchesCap]recentBatch
}

type recentBatch struct {
	baseOffset, lastOffset, pos int64
}

// recentBatchesCap bounds the memory per active segment (a few hundred
// bytes) while covering a follower or consumer a few batches behind.
const recentBatchesCap = 16

// add records a batch appended at pos.
func (r *recentBatches) add(base, last, pos int64) {
	r.e[r.next] = recentBatch{baseOffset: base, lastOffset: last, pos: pos}
	r.next = (r.next + 1) % recentBatchesCap
	r.n = min(r.n+1, recentBatchesCap)
}

// find returns the position of the batch holding offset, or of the first
// batch after it; ok is false when offset lies before the oldest batch
// held or past the newest, and the caller must use the index.
func (r *recentBatches) find(offset int64) (pos int64, ok bool) {
	if r == nil || r.n == 0 {
		return 0, false
	}
	oldest := (r.next - r.n + recentBatchesCap) % recentBatchesCap
	if offset < r.e[oldest].baseOffset {
		return 0, false
	}
	for i := range r.n {
		b := r.e[(oldest+i)%recentBatchesCap]
		if b.lastOffset >= offset {
			return b.pos, true
		}
	}
	return 0, false
}
