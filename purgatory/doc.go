// Package purgatory holds delayed operations until they can complete or
// their deadline passes, like Kafka's DelayedOperationPurgatory. It knows
// nothing of Kafka: a key is any comparable value (a partition, say), and
// an Operation decides for itself whether it can complete.
//
// # Use
//
// A caller that cannot answer a request yet (a produce waiting for the high
// watermark, a fetch waiting for bytes) wraps it in an Operation and calls
// TryCompleteElseWatch with a deadline and the keys whose changes may let it
// complete. Whenever something changes for a key, the caller calls
// Check(key). Close at shutdown.
//
// # Exactly once
//
// Every Operation handed to TryCompleteElseWatch ends exactly once, in one
// of two ways:
//
//   - TryComplete returns true. TryComplete did the completion work itself
//     (sent the response); the purgatory never calls it again and never
//     calls OnExpire.
//   - OnExpire is called, once: the deadline passed, or Close was called,
//     first. TryComplete is not called after OnExpire has been decided.
//
// Each waiting operation carries a mutex. TryComplete runs only while it is
// held, so TryComplete never runs concurrently with itself for one
// operation, and the decision "completed" or "expired" is made under it, so
// the two cannot both happen. OnExpire also runs under it, before the
// operation leaves its watch lists.
//
// No change is missed. TryCompleteElseWatch tries once before watching and
// once more after, so a Check that ran between the first try and the watch
// (and so did not see the operation) is covered. A Check that finds the
// operation busy in TryComplete on another goroutine does not wait: it
// flags the operation, and the goroutine running TryComplete tries again
// once it returns false. This is also why a TryComplete that calls Check
// on one of its own keys does not deadlock.
//
// A completed or expired operation is removed at once from every key it
// watched and its timer is stopped; a key with no operations left is
// deleted from the index, so nothing accumulates however many operations
// pass through.
//
// # Goroutines
//
// The purgatory starts no goroutine of its own and needs no Run: each
// deadline is a time.AfterFunc timer, stopped when the operation completes
// and on Close. So:
//
//   - TryComplete runs on the goroutine that called TryCompleteElseWatch or
//     Check.
//   - OnExpire runs on the timer's goroutine when the deadline passes, on
//     the goroutine calling Close for operations still waiting then, and on
//     the goroutine calling TryCompleteElseWatch after Close.
//
// Close returns once every operation it found waiting has ended: one whose
// expiry a timer has begun is still in its watch lists until OnExpire
// returns, and Close waits for it on the operation's mutex.
//
// # Rules for Operations
//
// TryComplete and OnExpire should be quick: they run on callers' and
// timers' goroutines. TryComplete may call Check (for any key) but must not
// call Close; OnExpire may call Check but not Close.
//
// # Lock order
//
// operation mutex (held during TryComplete) → shard mutex → operation's
// watch-list mutex. No shard mutex is held while TryComplete or OnExpire
// runs.
//
// It imports the standard library only, and must never import a kbroker
// package: it knows nothing Kafka-specific.
package purgatory
