package listener

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestSASLFrameBounds: a declared frame length beyond maxSASLFrame is
// refused before anything of that size is allocated.
func TestSASLFrameBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"empty frame", []byte{0, 0, 0, 0}, true},
		{"small", append([]byte{0, 0, 0, 3}, "abc"...), true},
		{"huge declared", []byte{0xff, 0xff, 0xff, 0xff}, false},
		{"just over", binary.BigEndian.AppendUint32(nil, maxSASLFrame+1), false},
		{"truncated", []byte{0, 0, 0, 9, 'a'}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readSASLFrame(bytes.NewReader(tc.in))
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
