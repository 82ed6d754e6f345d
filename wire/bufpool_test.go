package wire

import (
	"bytes"
	"testing"
)

func TestPooledClass(t *testing.T) {
	for _, tc := range []struct{ n, class int }{
		{0, 0}, {1, 0}, {512, 0}, {513, 1}, {1024, 1}, {1025, 2},
		{64 << 10, 7}, {MaxPooledBuf - 1, maxPooledShift - minPooledShift},
		{MaxPooledBuf, maxPooledShift - minPooledShift}, {MaxPooledBuf + 1, -1},
	} {
		if got := pooledClass(tc.n); got != tc.class {
			t.Errorf("pooledClass(%d) = %d, want %d", tc.n, got, tc.class)
		}
		if tc.class >= 0 && 1<<(tc.class+minPooledShift) < tc.n {
			t.Errorf("class %d of %d bytes is too small", tc.class, tc.n)
		}
	}
}

// TestBufPool checks lengths and capacities, that a buffer given back
// is poisoned in a test binary, and that one above MaxPooledBuf is not
// pooled.
func TestBufPool(t *testing.T) {
	if !Poisoning() {
		t.Skip("no poisoning while benchmarks run")
	}
	for _, n := range []int{1, 700, 4096, MaxPooledBuf, MaxPooledBuf + 1} {
		p := GetBuf(n)
		if len(*p) != n || cap(*p) < n {
			t.Fatalf("GetBuf(%d): len %d cap %d", n, len(*p), cap(*p))
		}
		if n <= MaxPooledBuf && cap(*p)&(cap(*p)-1) != 0 {
			t.Fatalf("GetBuf(%d): capacity %d is not a size class", n, cap(*p))
		}
		b := *p
		for i := range b {
			b[i] = 1
		}
		PutBuf(p)
		if !bytes.Equal(b, bytes.Repeat([]byte{PoisonByte}, n)) {
			t.Fatalf("GetBuf(%d): not poisoned after PutBuf", n)
		}
	}
}
