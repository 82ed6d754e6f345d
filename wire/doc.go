// Package wire is the byte level of the Kafka protocol: TCP framing and
// request/response headers. Record batches live in wire/record.
//
// Every request and response is a frame, a big-endian int32 size followed
// by that many bytes:
//
//	request frame                         response frame
//	+--------------------+                +--------------------+
//	| size         int32 |                | size         int32 |
//	+--------------------+                +--------------------+
//	| apiKey       int16 |                | correlationId int32|
//	| apiVersion   int16 |                | tagged fields      | flexible only
//	| correlationId int32|                +--------------------+
//	| clientId   string? | header v1+     | body               |
//	| tagged fields      | header v2      +--------------------+
//	+--------------------+
//	| body               |
//	+--------------------+
//
// A request uses header v2 when its (apiKey, apiVersion) is flexible
// (KIP-482), v1 otherwise, and v0 (no client id) only for
// ControlledShutdown v0. A response header has tagged fields exactly when
// the request was flexible, except for ApiVersions, whose response header
// is always v0 so that a client can read it before knowing what the
// broker supports.
//
// The caller's duties, in order:
//
//  1. ReadFrame with socket.request.max.bytes as the limit: an oversize or
//     negative size is refused before anything is allocated, and the
//     connection should be closed.
//  2. ParseRequestHeader on the frame; it returns the body.
//  3. Decode the body with kmsg (kmsg.RequestForKey, SetVersion, ReadFrom);
//     handlers work on typed kmsg requests and build kmsg responses.
//  4. AppendResponse with the encoded response body and the flexibility
//     from ResponseHeaderFlexible.
//
// GetBuf and PutBuf (bufpool.go) are the broker's size-classed byte
// buffer pools, shared by storage's pooled reads and the connections'
// write and request buffers; a buffer given back must not be used again
// (test binaries fill it with PoisonByte to make that visible).
//
// Nothing here does I/O beyond ReadFrame's reads, keeps state other than
// those pools, or starts goroutines.
//
// It imports kmsg only, and must never import any other kbroker
// package.
package wire
