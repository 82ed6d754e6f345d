// Package membership tells a kbroker node which other nodes are alive, using
// gossip (hashicorp/memberlist, SWIM with suspicion).
//
// Every node runs one Membership. Its memberlist node name is
// "kbroker-<id>" and its node meta carries the node id (4 bytes, big
// endian), so names are stable across restarts: a node that restarts with the
// same id (and a new incarnation) comes back as the same member, at the same
// or at a new address.
//
// A restart is seen by the others as Alive=false then Alive=true only if
// the node was declared dead before it came back; a restart quicker than
// failure detection at the same address is refuted silently by the new
// incarnation (no event). A node already declared dead may reclaim its name
// at a new address at once (DeadNodeReclaimTime is set to a nanosecond); a
// node that comes back at a new address BEFORE its old instance is declared
// dead is rejected as a conflict and accepted after the old one dies, at the
// latest on the next push-pull (memberlist's PushPullInterval, 30s in the
// LAN profile).
//
// # Caller's duties, in order
//
//  1. New(cfg) validates the config and constructs; it starts nothing.
//  2. Consume Events() in a goroutine of your own (it is closed when Run
//     returns). Alive() may be called at any time.
//  3. Run(ctx) creates the memberlist, joins the seeds and delivers events
//     until ctx is done; then it leaves the cluster gracefully, shuts
//     memberlist down and returns. Run may be called once.
//
// # Events
//
// An Event is emitted when memberlist reports a node joining (Alive=true)
// or leaving (Alive=false). memberlist reports "leaving" both for a graceful
// leave and for a node declared dead after the suspicion timeout, so the two
// are not distinguished. The local node is reported too (Alive=true when Run
// starts, Alive=false when it leaves).
//
// Events are never dropped while Run runs, and the memberlist delegate never
// blocks (memberlist calls it with its node lock held, so blocking would stall
// failure detection for everyone): pending events are COALESCED PER NODE, the
// latest state wins. A slow consumer may therefore miss an intermediate state
// (a node that died and came back before the consumer read the first event
// is seen only as Alive=true); it always sees each node's latest state, and
// Alive() reflects the latest state immediately. Fencing of a restarted node
// is the metadata layer's job (broker registration with an incarnation), not
// this package's. Pending events that were not delivered when ctx is done
// are discarded, and Events() is closed.
//
// # Goroutines
//
//   - memberlist's own goroutines (listeners, probing, gossip, push-pull):
//     started by Run through memberlist.Create and stopped by Run's
//     shutdown (Leave with a timeout, then Shutdown).
//   - the join-retry loop: started by Run when there are seeds other than
//     this node; it calls Join every JoinRetryInterval until at least one
//     other node is a member, or ctx is done. Run waits for it before
//     returning. A Join in progress cannot be interrupted, so Run may wait
//     up to memberlist's TCPTimeout (10s in the LAN profile) for it.
//   - the address watcher: started by Run unless the node is bound to one
//     IP; every second it computes the address memberlist would advertise
//     now (AdvertiseAddr resolved again, else the private IP) and, when it
//     differs from the advertised one (a container reconnected to its
//     network with a new IP), leaves under the old address, shuts that
//     memberlist down and creates a new one on the same port advertising
//     the new address, with its own join loop. memberlist accepts a
//     member's new address only once the old one has left or died, so
//     peers report the node dead once, then alive again. Stopped by ctx.
//   - event delivery runs on Run's own goroutine.
//
// # Logging
//
// memberlist's log lines are routed to the slog.Logger of the Config:
// [DEBUG] is dropped, [INFO], [WARN] and [ERR] map to Info, Warn and Error.
//
// It imports hashicorp/memberlist only, and must never import any
// kbroker package: what a death means is the controller's.
package membership
