// Package kafkaapi holds the Kafka API handlers of one broker, Kafka's
// KafkaApis: one file per API, api_NN_name.go with NN the API key, each
// registering from init its key, the version range served and the
// authorizations it needs (apis.go). The registry is the single source
// of the dispatch table (Handlers.APIs, given to cluster/server) and so
// of ApiVersions; kversion_test.go compares it with Kafka 4.0.
//
// # What it owns
//
//   - Serving each API: the connection layer hands a handler the decoded
//     kmsg request; the handler validates it, asks replication, metadata,
//     storage or a coordinator, and builds the response. It decides
//     nothing those layers decide.
//   - The one mapping from internal errors to Kafka error codes
//     (errors.go), chosen per sentinel on purpose.
//   - The delayed operations of the data path: acks=all produces waiting
//     for the high watermark, fetches waiting for MinBytes
//     (api_00_produce.go, api_01_fetch.go, delayed.go), read_committed
//     fetches up to the last stable offset (fetch_committed.go), KIP-890
//     produce verification with the transaction coordinator
//     (txns_verify.go), KIP-951 leader hints (leader_hints.go), and the
//     bounded waits for metadata this broker has not applied yet
//     (leader_catchup.go).
//
// # Contracts
//
// Handlers (New, then Attach before the first request) holds what the
// handlers serve from; the node builds it, with the node's answers about
// liveness behind the Liveness interface. A handler runs on its
// connection's reader goroutine and may block only as long as its
// request needs, bounded by the request's context (a controller call, a
// coordinator's write, a bounded wait for metadata); anything longer is
// parked in a purgatory (server.Park) and answered through
// RequestContext.Respond, which never blocks. No handler holds a lock of
// its own across a call into another layer, except delayedProduce.mu
// (docs/LOCKING.md).
//
// # Imports
//
// It imports the layers it serves from (metadata, replication, storage,
// purgatory, config, wire), the coordinators (cluster/groupcoord,
// cluster/txncoord and their state machines), cluster/fetchsession and
// cluster/server (the request context and the API table type). It must
// never import the node (package cluster), cluster/acl (authorization is
// the server's step, with the authorizer the node installs),
// cluster/membership or cluster/quotas (quota accounting is the
// server's).
package kafkaapi
