// Package listener is the transport of the metadata controller listener,
// both ends: the connections every node accepts and dials for raft and
// the controller RPC.
//
// It owns accepting connections (Accept, which survives EMFILE and the
// like with a backoff), authenticating them (Authenticator: mutual TLS
// with AuthorizePeer, or a framed SASL exchange, SASL, inside or without
// TLS), the one-byte preamble that picks the protocol ('R' raft, 'C' the
// RPC), raft's stream layer over the shared listener (StreamLayer), the
// RPC's frames (a 4-byte big-endian length and a JSON document of at most
// MaxFrame) with serving a connection's requests (Serve) and the client
// side of a call (Dialer.Call on a connection of its own; Pool.Call on
// connections kept open between calls, one call at a time each), and
// node addresses kept unresolved (ParseAddr).
//
// Which operations exist, who may ask for them, and which sentinel error
// each wire code stands for belong to package metadata, which serves the
// RPC and routes raft connections to its transport. This package must
// never import metadata (metadata imports it) nor anything of kbroker
// but the standard library and hashicorp/raft: it knows bytes,
// connections and identities, not the cluster metadata.
package listener
