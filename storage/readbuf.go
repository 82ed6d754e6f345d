package storage

import "github.com/kbroker/kbroker/wire"

// Pooled read buffers. A fetch reads up to a partition's max bytes per
// partition into a buffer that lives only until its response is encoded
// onto the socket; allocating each one made storage reads the largest
// source of garbage of a busy node. ReadPooled takes its buffers from the
// size-classed pools of package wire instead (wire.GetBuf; reads above
// wire.MaxPooledBuf allocate) and records them in a ReadBuffers, whose
// owner gives them back with Release.
//
// The ownership rule: the bytes ReadPooled returns belong to the
// ReadBuffers passed in, and are valid until its Release. Whoever calls
// Release must be sure nothing reads them afterwards: nothing may keep a
// subslice of them (a cache, a retained response) past that point. Plain
// Read allocates and never reuses, for every caller that keeps what it
// reads or cannot tell when it is done.

// ReadBuffers holds the pooled buffers of one or more reads (ReadPooled)
// until Release. A nil *ReadBuffers makes the reads allocate as Read does.
// It is not safe for concurrent use: one goroutine reads into it at a
// time. The zero value is ready to use and may be reused after Release.
type ReadBuffers struct {
	bufs []*[]byte
}

// get returns a buffer of n bytes (contents undefined) that r owns.
func (r *ReadBuffers) get(n int) []byte {
	if r == nil || n == 0 {
		return make([]byte, n)
	}
	p := wire.GetBuf(n)
	r.bufs = append(r.bufs, p)
	return *p
}

// Release gives every buffer back to its pool. The bytes of the reads
// into r must not be used afterwards. Release on a nil *ReadBuffers does
// nothing.
func (r *ReadBuffers) Release() {
	if r == nil {
		return
	}
	for i, p := range r.bufs {
		wire.PutBuf(p)
		r.bufs[i] = nil
	}
	r.bufs = r.bufs[:0]
}

// Len reports how many pooled buffers r holds (for tests).
func (r *ReadBuffers) Len() int {
	if r == nil {
		return 0
	}
	return len(r.bufs)
}
