// Package cluster puts one kbroker node together: it opens the storage,
// metadata and replication layers, serves the Kafka protocol on the
// broker listeners, and stops everything again in order.
//
// # What it owns
//
//   - Node (node.go): construction from a config.Config, Run, and the glue
//     between the layers: the replica manager's hooks wake the produce and
//     fetch purgatories and the group coordinator; the effective topic
//     config is resolved against the image's dynamic defaults.
//   - The wiring of the connection layer (package cluster/server): the
//     node builds the server's Config from its own, hands it the API
//     table (apis.go) and the listeners' security, and installs the
//     client quota engine (package cluster/quotas) and the authorizer.
//     A fetch's pooled reads are given back after the writer encoded its
//     response (RequestContext.AfterWrite).
//   - Listener security (security.go; the connection side is
//     cluster/server's conn_auth.go, reached by the SaslHandshake and
//     SaslAuthenticate handlers): the TLS handshake before a connection's
//     first request, SASL before anything but ApiVersions, the principal
//     on every RequestContext, KIP-368 re-authentication; the follower
//     fetchers' TLS/SASL client side, broker principals for follower
//     fetches, and the controller listener's mutual TLS handed to
//     metadata. SCRAM credentials come from scram_store.go.
//   - Dispatch and the API registry: each handler file
//     api_NN_name.go (NN the API key) serves one Kafka API; the registry
//     of served APIs and their version ranges is the single source of
//     ApiVersions. Dispatch decodes the body with kmsg, runs the
//     cross-cutting steps (metrics; authorization belongs here) and calls
//     the handler with a RequestContext.
//   - Authorization (cluster/server/authz.go, authz_acl.go): each API declares the
//     actions it needs and checks what Kafka's KafkaApis checks; the
//     Authorizer is AllowAll, or with authorizer.class.name the ACL
//     authorizer of package cluster/acl over this node's metadata image.
//     The ACL and SCRAM APIs (api_29-31, api_50-51, acls.go) manage the
//     ACL and SCRAM records, and scram_store.go serves SCRAM credentials
//     from the image; bootstrap credentials (SetBootstrapScram) are
//     written when the cluster is created.
//   - The one mapping from internal errors to Kafka error codes
//     (errors.go).
//   - The group coordinator (groupcoord) over __consumer_offsets, around
//     the pure state machine of package cluster/group; it holds
//     transactional offsets until their marker (groupcoord/txn_offsets.go).
//   - The transaction coordinator (txncoord) over __transaction_state,
//     around the pure state machine of package cluster/txn: InitProducerId
//     with a transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
//     the marker sender (txncoord/markers.go), timeouts, KIP-890 produce
//     verification (txns_verify.go); read_committed fetches read up to the
//     last stable offset (fetch_committed.go); partition leaders describe
//     their producers' state (api_61_describe_producers.go).
//   - Liveness (liveness.go): the heartbeat loop, memberlist deaths turned
//     into fencing, the controlled shutdown.
//   - Metrics and the admin HTTP server (metrics.go, state_metrics.go,
//     admin.go).
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
package cluster
