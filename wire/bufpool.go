package wire

import (
	"flag"
	"math/bits"
	"os"
	"sync"
	"testing"
)

// Pooled byte buffers for the broker's per-request garbage: the record
// chunks a fetch reads from storage and the socket buffers its response
// is encoded into. Both live only until a response is written, and were
// the largest sources of allocation of a busy node; taking them from one
// set of size-classed pools lets a buffer freed by one connection serve
// the next read or write of any other.
//
// Size classes are the powers of two from MinPooledBuf to MaxPooledBuf
// (4 MiB: a follower fetch response of six 1 MiB partitions is encoded
// into one). Larger buffers are allocated and left to the garbage
// collector, so one large read or response does not keep its memory
// pinned in a pool.
const (
	minPooledShift = 9  // 512 B
	maxPooledShift = 22 // 4 MiB

	MinPooledBuf = 1 << minPooledShift
	MaxPooledBuf = 1 << maxPooledShift
)

// Each class keeps a few buffers on a free list that the garbage
// collector does not empty, then a sync.Pool for the overflow. A busy
// node collects garbage several times a second and a sync.Pool is
// emptied within two collections: alone, it handed out newly allocated
// buffers for about half of the large requests (the bench of issue 14).
// A free list holds at most freeListBytes (at least one buffer, at most
// 64), so the lists pin at most about 32 MiB, and only after a burst
// needed that many buffers at once; beyond them a burst goes through the
// sync.Pool and the garbage collector.
const freeListBytes = 4 << 20

type sizeClass struct {
	free chan *[]byte
	pool sync.Pool
}

var pools [maxPooledShift - minPooledShift + 1]sizeClass

func init() {
	for i := range pools {
		pools[i].free = make(chan *[]byte, min(max(freeListBytes>>(i+minPooledShift), 1), 64))
	}
}

// PoisonByte fills buffers given back while poisoning is on.
const PoisonByte = 0xAA

// Poisoning makes PutBuf fill each buffer with PoisonByte, so bytes used
// after their release show up as corrupt batches instead of as plausible
// data. It is on in a binary built with -race or the kbroker_poison tag
// (itest builds the broker that way, bufpool_poison.go), with
// KBROKER_POISON_RELEASED=1, and in test binaries (testing.Testing)
// except when they run benchmarks (-test.bench), whose figures it would
// distort.
var (
	poisonForced = os.Getenv("KBROKER_POISON_RELEASED") == "1"
	poisonOnce   sync.Once
	poison       bool
)

// Poisoning reports whether PutBuf poisons the buffers it takes back.
// The test flags are parsed by the time the first buffer is given back.
func Poisoning() bool {
	poisonOnce.Do(func() {
		bench := flag.Lookup("test.bench")
		poison = poisonForced || testing.Testing() && (bench == nil || bench.Value.String() == "")
	})
	return poison
}

// pooledClass is the pool index of a buffer of n bytes, or -1 for sizes
// that are not pooled.
func pooledClass(n int) int {
	if n > MaxPooledBuf {
		return -1
	}
	if n <= MinPooledBuf {
		return 0
	}
	return bits.Len(uint(n-1)) - minPooledShift
}

// GetBuf returns a buffer of length n (contents undefined) from the
// pools, or newly allocated when n is above MaxPooledBuf. Its capacity is
// that of its size class. Give it back with PutBuf once nothing uses its
// bytes any more.
func GetBuf(n int) *[]byte {
	c := pooledClass(n)
	if c < 0 {
		b := make([]byte, n)
		return &b
	}
	var p *[]byte
	select {
	case p = <-pools[c].free:
	default:
		p, _ = pools[c].pool.Get().(*[]byte)
	}
	if p == nil {
		b := make([]byte, 1<<(c+minPooledShift))
		p = &b
	}
	*p = (*p)[:n]
	return p
}

// PutBuf gives a buffer of GetBuf back. Its bytes, and those of every
// slice of it, must not be used afterwards. A buffer whose capacity is
// not a size class (above MaxPooledBuf, or not from GetBuf) is dropped.
func PutBuf(p *[]byte) {
	c := cap(*p)
	if Poisoning() {
		b := (*p)[:c]
		for i := range b {
			b[i] = PoisonByte
		}
	}
	if c < MinPooledBuf || c > MaxPooledBuf || c&(c-1) != 0 {
		return
	}
	class := &pools[pooledClass(c)]
	select {
	case class.free <- p:
	default:
		class.pool.Put(p)
	}
}
