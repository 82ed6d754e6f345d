// Package monotime keeps instants as int64 nanoseconds on the process's
// monotonic clock, for state that must sit in an atomic.Int64 where a
// time.Time cannot. Unlike UnixNano, such an instant does not move when
// the host's wall clock is stepped (NTP, an operator, a VM resume), so a
// duration measured between two of them is the time that really passed.
//
// It imports the standard library only, and must never import a kbroker
// package.
package monotime

import "time"

// base anchors the instants: a time.Time read with its monotonic clock
// reading when the process started.
var base = time.Now()

// Now is the instant now.
func Now() int64 { return int64(time.Since(base)) }

// Of is the instant of t. A t from time.Now (or derived from one with
// Add) carries a monotonic reading and converts exactly; one without
// (parsed, or from a test's fixed clock) converts by its wall time.
func Of(t time.Time) int64 { return int64(t.Sub(base)) }

// Time is instant n as a time.Time with a monotonic reading, so that
// Sub and Until against time.Now measure monotonic time.
func Time(n int64) time.Time { return base.Add(time.Duration(n)) }
