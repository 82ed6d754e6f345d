// Package wallclock is the broker's wall clock: every read of the time of
// day that kbroker stores or compares as a time of day (record
// timestamps, retention by timestamp, segment.ms of segments with data,
// the transaction log's stamps) goes through Now. Durations (sessions,
// transaction timeouts on a live coordinator, quota windows, throttles,
// flush.ms) are measured on the monotonic clock instead (time.Now's
// monotonic reading, internal/monotime) and never through this package.
//
// For fault injection only, the clock can be offset from the host's:
// the chaos harness jumps one node's clock forwards and backwards while
// the others keep the host's. The host clock is shared by every process
// on a machine and must not be stepped for that, time namespaces shift
// only the monotonic and boot clocks, and libfaketime cannot reach a Go
// binary (it reads the time through the vDSO without libc); an offset
// inside the one function every wall-clock read calls is the mechanism
// left. The offset is 0 unless `kbroker serve --fault-clock-file` is
// given (see LoadOffset), and a broker in production never sets it.
//
// It imports the standard library only, and must never import a kbroker
// package.
package wallclock
