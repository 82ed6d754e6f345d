package metadata

import (
	"fmt"

	"github.com/kbroker/kbroker/metadata/listener"
)

// peerIdentity is who sent a controller RPC: with an authenticated
// controller listener (Config.ServerTLS or Config.SASL) the node id
// Config.AuthorizePeer or ControllerSASL.AuthorizeUser mapped the peer
// to; on a PLAINTEXT listener nobody in particular (Verified false), and
// every operation is allowed as before.
type peerIdentity = listener.Peer

// anyNode is what an op's actsFor returns when any authenticated node may
// ask for the operation (admin operations a broker forwards for its
// clients, reads).
const anyNode int32 = -1

// authorizeOp refuses a request from a verified peer that acts for another
// node than the peer: broker N's certificate may heartbeat, register,
// shut down, allocate producer ids and change partitions it leads only as
// broker N. A nil actsFor means anyNode.
func authorizeOp[Req any](img *Image, name string, peer peerIdentity, actsFor func(*Image, Req) int32, req Req) error {
	if !peer.Verified || actsFor == nil {
		return nil
	}
	want := actsFor(img, req)
	if want == anyNode || want == peer.Node {
		return nil
	}
	return fmt.Errorf("%w: node %d may not send %s for node %d", ErrNotAuthorized, peer.Node, name, want)
}
