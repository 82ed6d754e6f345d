// Package server is kbroker's network layer for the Kafka protocol: an
// acceptor per client listener, a reader and a writer goroutine per
// connection, and the dispatch of each request through the API table
// (API) the node hands to New.
//
// # What it owns
//
//   - Connections (server.go, accept.go, conn.go): max.connections and
//     max.connections.per.ip (connlimits.go), connections.max.idle.ms,
//     responses written in request order, at most 64 requests in flight
//     per connection, queued.max.request.bytes (reqmem.go), coalesced
//     writes of ready responses, and a Produce frame read into a pooled
//     buffer given back when its handler returns.
//   - Listener security on a connection (conn_auth.go, listener.go): the
//     TLS handshake before the first request, SASL before anything but
//     ApiVersions, KIP-368 re-authentication; the principal on every
//     RequestContext.
//   - Dispatch (conn.go, guard.go, arraybounds.go): a request's array
//     counts are bounded before kmsg decodes it, an unsupported version
//     of ApiVersions is answered in v0, a handler's panic closes only its
//     connection, and a delayed operation parked in a purgatory (Park)
//     leaves it when its connection drops.
//   - Authorization as a step of dispatch (authz.go): the actions an API
//     declares are asked of the Authorizer in one batch before its handler
//     runs, and handlers may ask more through RequestContext.
//   - Client quota accounting (quotas_request.go, quotas_mutation.go):
//     each answered request is recorded against the quotas of package
//     cluster/quotas, and a throttled response carries throttle_time_ms
//     and mutes its connection.
//   - The request metrics (metrics.go) and ApiVersions' ranges
//     (apiversions.go): the API table is the single source of both.
//
// # Contracts
//
// A HandlerFunc runs on its connection's reader goroutine: it may block
// only for as long as the request itself needs (a controller call, a log
// read), bounded by the request's context. It either returns a response
// or returns nil and answers later through RequestContext.Respond, which
// never blocks and may be called under any lock, from any goroutine.
// The Authorizer is called on the reader goroutine without locks held.
//
// Serve owns every goroutine it starts and returns only after all have
// stopped; Abandon gives up on connections still waiting to write.
//
// # Imports
//
// It imports wire (framing and headers), security (TLS and SASL),
// purgatory, config (ConfigFrom) and cluster/quotas, and must never
// import metadata, replication, storage, the Kafka API handlers, the
// coordinators, or the node (package cluster) that wires it.
package server
