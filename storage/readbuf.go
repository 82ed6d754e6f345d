package storage

import (
	"math/bits"
	"os"
	"sync"
	"testing"
)

// Pooled read buffers. A fetch reads up to a partition's max bytes per
// partition into a buffer that lives only until its response is encoded
// onto the socket; allocating each one made storage reads the largest
// source of garbage of a busy node. ReadPooled takes its buffers from
// size-classed pools instead and records them in a ReadBuffers, whose
// owner gives them back with Release.
//
// The ownership rule: the bytes ReadPooled returns belong to the
// ReadBuffers passed in, and are valid until its Release. Whoever calls
// Release must be sure nothing reads them afterwards: nothing may keep a
// subslice of them (a cache, a retained response) past that point. Plain
// Read allocates and never reuses, for every caller that keeps what it
// reads or cannot tell when it is done.

const (
	// Size classes are the powers of two from minPooledBuf to
	// maxPooledBuf. Larger reads (a first batch over a fetch's limit, a
	// fetch.max.bytes above 1 MiB per partition) allocate and are left to
	// the garbage collector, so one large read does not keep its memory
	// pinned in a pool. sync.Pool itself drops what stays unused for two
	// garbage collections.
	minPooledShift = 9  // 512 B
	maxPooledShift = 20 // 1 MiB
	minPooledBuf   = 1 << minPooledShift
	maxPooledBuf   = 1 << maxPooledShift
)

var readPools [maxPooledShift - minPooledShift + 1]sync.Pool

// poisonReleased fills released buffers with poisonByte, so that bytes
// read after their Release show up as corrupt batches instead of as
// plausible data. It is on in test binaries (testing.Testing), in a binary
// built with -race or the kbroker_poison tag (itest builds the broker that
// way), and when KBROKER_POISON_RELEASED=1.
var poisonReleased = testing.Testing() || os.Getenv("KBROKER_POISON_RELEASED") == "1"

const poisonByte = 0xAA

// pooledClass is the pool index of a buffer of n bytes, or -1 for sizes
// that are not pooled.
func pooledClass(n int) int {
	if n > maxPooledBuf {
		return -1
	}
	if n <= minPooledBuf {
		return 0
	}
	return bits.Len(uint(n-1)) - minPooledShift
}

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
	c := pooledClass(n)
	if c < 0 {
		return make([]byte, n)
	}
	p, _ := readPools[c].Get().(*[]byte)
	if p == nil {
		b := make([]byte, 1<<(c+minPooledShift))
		p = &b
	}
	r.bufs = append(r.bufs, p)
	return (*p)[:n]
}

// Release gives every buffer back to its pool. The bytes of the reads
// into r must not be used afterwards. Release on a nil *ReadBuffers does
// nothing.
func (r *ReadBuffers) Release() {
	if r == nil {
		return
	}
	for i, p := range r.bufs {
		if poisonReleased {
			b := (*p)[:cap(*p)]
			for j := range b {
				b[j] = poisonByte
			}
		}
		readPools[pooledClass(cap(*p))].Put(p)
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
