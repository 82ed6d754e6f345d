// Package cluster puts one kbroker node together: it opens the storage,
// metadata and replication layers, serves the Kafka protocol on the
// broker listeners, and stops everything again in order.
//
// # What it owns
//
// A thin node that wires the rooms of the broker together:
//
//   - Node (node.go): construction from a config.Config, Run, and the glue
//     between the layers: the replica manager's hooks wake the produce and
//     fetch purgatories and the coordinators; the effective topic config
//     is resolved against the image's dynamic defaults; producer id blocks
//     come from the controller.
//   - The wiring of the connection layer (package cluster/server): the
//     node builds the server's Config from its own, hands it the API
//     table of package cluster/kafkaapi (the Kafka API handlers, one file
//     per API) and the listeners' security, and installs the client quota
//     engine (package cluster/quotas) and the authorizer.
//   - Listener security (security.go): the TLS/SASL settings of each
//     client listener (the connection side is cluster/server's), the
//     follower fetchers' TLS/SASL client side, broker principals for
//     follower fetches, and the controller listener's mutual TLS handed to
//     metadata. SCRAM credentials come from the image (scram_store.go);
//     bootstrap credentials (SetBootstrapScram) are written when the
//     cluster is created.
//   - The authorizer (authz_acl.go): AllowAll, or with
//     authorizer.class.name the ACL authorizer of package cluster/acl
//     over this node's metadata image.
//   - The coordinators' hosts (groups_host.go, txns_host.go): the node's
//     side of the host interfaces of packages cluster/groupcoord and
//     cluster/txncoord (their state topics' replicas, creating the
//     topics, producer ids, markers written locally).
//   - Liveness (liveness.go, session.go): the heartbeat loop and the
//     broker's controller session, memberlist deaths turned into
//     fencing, brokers whose listeners refused this node's fetchers, the
//     controlled shutdown; the handlers ask it through kafkaapi.Liveness.
//   - Log dir failures (logdirs.go), the partition capacity and file
//     limits (capacity.go), the dynamic cleaner keys (dynamic_cleaner.go),
//     the ISR change limiter (isr_limit.go).
//   - Metrics and the admin HTTP server (state_metrics.go, admin.go).
//
// It decides nothing the layers below decide: leadership, the high
// watermark, validation of batches and metadata changes stay in
// replication, storage and metadata. The design of the whole broker is
// in docs/ARCHITECTURE.md at the root of the repository.
//
// # Goroutines and their owners
//
// Node.Run starts every goroutine of the node and returns only after all
// have stopped:
//
//   - the request server: one acceptor per broker listener and, per
//     connection, a reader (which runs the handlers) and a writer; stopped
//     by the serving context, which closes the listeners and unblocks each
//     reader; Serve waits for them all;
//   - one TLS reloader per TLS store (client listeners, controller
//     listener), watching the key and trust files until Run returns;
//   - the replica manager's Run (image watcher; it owns the fetchers, the
//     ISR checker, the ISR proposals and the log dir movers, and takes
//     the partitions of a failed log dir offline), the storage manager's Run
//     (flushes, retention, checkpoints, cleaning), the group coordinator's
//     run (ticks, offset expiry, and one loader per __consumer_offsets
//     partition being loaded), the transaction coordinator's run (timeout
//     aborts, id expiry, the marker sender with one goroutine per leader
//     in a round, and one loader per __transaction_state partition being
//     loaded), the admin HTTP server, memberlist gossip and
//     its watcher: all on the background context, cancelled after the
//     server has stopped, and joined by a WaitGroup;
//   - the heartbeat loop, on Run's own context, so it ends as soon as
//     shutdown begins;
//   - the shutdown goroutine (context.AfterFunc on Run's context) and the
//     drain backstop (context.AfterFunc on the serving context); Run
//     waits for the first and cancels the second before returning.
//
// The purgatories start no goroutines (their deadlines are timers,
// stopped by Close). The metadata store owns raft's goroutines and its
// controller-listener goroutines; Store.Close, deferred in Run, stops
// them.
//
// # Shutdown order
//
// When Run's context ends:
//
//  1. the heartbeat loop stops, so nothing unfences the broker again;
//  2. the controlled shutdown asks the controller to move this broker's
//     leaderships away while it still serves (bounded at 15s);
//  3. the server stops accepting and reading; the produce, fetch, group
//     and transaction purgatories are closed, which expires every waiting request,
//     so each connection writes its last responses and closes (after
//     drainTimeout, connections still waiting are abandoned);
//  4. the background goroutines are cancelled and joined;
//  5. the metadata store closes (raft stops), the listeners are closed if
//     still open, and the logs are flushed and closed, which writes the
//     clean-shutdown marker.
//
// The Node type's comment in node.go lists the same goroutines.
//
// # Locks
//
// In the order they may be nested (see docs/LOCKING.md for every lock of
// the broker and the code paths behind each nesting):
//
//	coordinator.InternalTopic.createMu     one per coordinator's state topic
//	producerIDAllocator.mu                 held across one controller call (10s at most)
//	purgatory operation lock               held while TryComplete/OnExpire run
//	delayedProduce.mu
//	groupcoord.Coordinator.mu
//	replication locks, then storage locks  (taken inside those packages)
//	slot completion, Server.mu, Node.mu    leaves
//
// Rules: replication's hooks run without replication's locks, and may
// take groupcoord.Coordinator.mu. Nothing is appended to a log and nothing is
// added to or closed in a purgatory while groupcoord.Coordinator.mu is held,
// because a write's completion takes that lock on the same goroutine.
// RequestContext.Respond never blocks, so it may be called under any of
// these locks.
//
// It imports every room below it (its subpackages, replication, storage,
// metadata, security, config) and prometheus; only the binary and the
// tests import it. It must never import cmd, itest or deploy.
package cluster
