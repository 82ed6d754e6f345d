package record

// IterateCompacted is Iterate for batches that a log cleaner may have
// rewritten: the records' offset deltas must increase strictly (and be
// >= 0) but need not be contiguous, and lastOffsetDelta must equal the last
// record's offset delta. Everything else is checked as Iterate checks it:
// recordCount > 0 and exactly that many records, well-formed varints,
// lengths and codec, no bytes after the last record, the maxUncompressed
// limit for compressed batches. A batch Iterate accepts is accepted too.
//
// Build makes such batches: it takes the records' OffsetDelta as given and
// sets lastOffsetDelta from the last one.
//
// r and everything it points to are reused or released when fn returns;
// fn must copy what it keeps.
func IterateCompacted(b Batch, maxUncompressed int, fn func(r *Record) error) error {
	return iterate(b, maxUncompressed, false, fn)
}

// ValidateCompacted is IterateCompacted with a no-op callback.
func ValidateCompacted(b Batch, maxUncompressed int) error {
	return IterateCompacted(b, maxUncompressed, func(*Record) error { return nil })
}
