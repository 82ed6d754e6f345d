package metadata

import "fmt"

// peerIdentity is who sent a controller RPC: with an authenticated
// controller listener (Config.ServerTLS) the node id Config.AuthorizePeer
// mapped the peer's certificate to; on a PLAINTEXT listener nobody in
// particular (verified false), and every operation is allowed as before.
type peerIdentity struct {
	verified bool
	node     int32
}

// anyNode is what an op's actsFor returns when any authenticated node may
// ask for the operation (admin operations a broker forwards for its
// clients, reads).
const anyNode int32 = -1

// authorizeOp refuses a request from a verified peer that acts for another
// node than the peer: broker N's certificate may heartbeat, register,
// shut down, allocate producer ids and change partitions it leads only as
// broker N. A nil actsFor means anyNode.
func authorizeOp[Req any](img *Image, name string, peer peerIdentity, actsFor func(*Image, Req) int32, req Req) error {
	if !peer.verified || actsFor == nil {
		return nil
	}
	want := actsFor(img, req)
	if want == anyNode || want == peer.node {
		return nil
	}
	return fmt.Errorf("%w: node %d may not send %s for node %d", ErrNotAuthorized, peer.node, name, want)
}
