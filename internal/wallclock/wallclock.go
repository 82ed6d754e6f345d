package wallclock

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// offset is added to the host's wall clock (nanoseconds); 0 unless a
// fault is injected.
var offset atomic.Int64

// Now is the time of day on this broker: the host's wall clock plus the
// fault-injection offset. The result has no monotonic reading, so a
// duration computed between two results follows the wall clock, jumps
// included: measure durations with time.Now or monotime instead.
func Now() time.Time {
	return time.Now().Round(0).Add(time.Duration(offset.Load()))
}

// NowMs is Now in Unix milliseconds, the unit of Kafka's timestamps.
func NowMs() int64 { return Now().UnixMilli() }

// Stamp is the time of day on this broker at instant t, a time.Now
// reading kept for a duration (a transaction's start): t's wall reading
// plus the current offset, without a monotonic reading.
func Stamp(t time.Time) time.Time {
	return t.Round(0).Add(time.Duration(offset.Load()))
}

// Offset is the current fault-injection offset.
func Offset() time.Duration { return time.Duration(offset.Load()) }

// SetOffset sets the fault-injection offset. Only the fault hook of
// `kbroker serve --fault-clock-file` and tests call it.
func SetOffset(d time.Duration) { offset.Store(int64(d)) }

// maxOffset bounds what a clock file may say: far enough for any clock
// jump a test wants, short of overflowing a time.Time.
const maxOffset = 100 * 365 * 24 * time.Hour

// ErrBadOffset is LoadOffset's error for a file that holds no duration.
var ErrBadOffset = errors.New("wallclock: bad offset")

// LoadOffset reads path, which holds a Go duration ("-2h30m", "90s",
// "0"), and sets the offset to it. A missing or empty file means 0.
func LoadOffset(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		SetOffset(0)
		return 0, nil
	}
	if err != nil {
		return Offset(), fmt.Errorf("wallclock: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		SetOffset(0)
		return 0, nil
	}
	if len(s) > 64 {
		return Offset(), fmt.Errorf("%w: %d bytes in %s", ErrBadOffset, len(s), path)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d > maxOffset || d < -maxOffset {
		return Offset(), fmt.Errorf("%w: %q in %s", ErrBadOffset, s, path)
	}
	SetOffset(d)
	return d, nil
}
