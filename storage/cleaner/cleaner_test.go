package cleaner

import (
	"fmt"
	"testing"
	"time"
)

// The key map's table never exceeds its buffer, whatever the dirty bytes.
func TestKeyMapSize(t *testing.T) {
	for _, tc := range []struct{ buffer, dirty int64 }{
		{1024, 1 << 30}, {DefaultDedupeBufferSize, 10}, {DefaultDedupeBufferSize, 1 << 20}, {24 * 3, 1 << 20},
	} {
		m := NewKeyMap(tc.buffer, tc.dirty)
		if m.Bytes() > max(tc.buffer, KeySlotBytes) || m.limit >= len(m.slots) || m.limit < 1 {
			t.Errorf("buffer %d dirty %d: %d bytes, limit %d of %d slots", tc.buffer, tc.dirty, m.Bytes(), m.limit, len(m.slots))
		}
		for i := 0; m.Room(1); i++ {
			m.Put([]byte(fmt.Sprint("k", i)), int64(i))
			if off, ok := m.Get([]byte(fmt.Sprint("k", i))); !ok || off != int64(i) {
				t.Fatalf("get k%d = %d %v", i, off, ok)
			}
		}
		if m.Len() != m.limit {
			t.Errorf("filled %d of limit %d", m.Len(), m.limit)
		}
	}
}

// log.cleaner.io.max.bytes.per.second: the throttle sleeps until the
// bytes accounted fit the rate; no limit is no throttle.
func TestThrottler(t *testing.T) {
	if NewThrottler(nil, 0, nil, nil) != nil || NewThrottler(nil, 1.7976931348623157e308, nil, nil) != nil {
		t.Fatal("no limit throttles")
	}
	clock := time.Unix(0, 0)
	var slept time.Duration
	th := NewThrottler(nil, 1000, nil, nil)
	th.state.start, th.now = clock, func() time.Time { return clock }
	th.sleep = func(d time.Duration, _ <-chan struct{}) { slept += d; clock = clock.Add(d) }
	th.Add(5) // 5 ms of transfer: within the slack
	if slept != 0 {
		t.Fatalf("slept %v for 5 bytes", slept)
	}
	th.Add(4995)
	if slept != 5*time.Second {
		t.Fatalf("slept %v for 5000 bytes at 1000 B/s", slept)
	}
	clock = clock.Add(10 * time.Second) // idle: no debt carried
	th.Add(1000)
	if slept != 5*time.Second {
		t.Fatalf("slept %v after an idle period", slept)
	}
}
