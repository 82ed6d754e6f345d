package membership

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hashicorp/memberlist"
)

// metaLen is the size of the node meta: the node id, 4 bytes big endian.
const metaLen = 4

func encodeMeta(id int32) []byte {
	b := make([]byte, metaLen)
	binary.BigEndian.PutUint32(b, uint32(id))
	return b
}

var errBadMeta = errors.New("membership: node meta is not a kbroker node id")

// nodeID returns the kbroker node id of a memberlist node, from its meta,
// and checks that its name matches.
func nodeID(n *memberlist.Node) (int32, error) {
	if len(n.Meta) != metaLen {
		return 0, fmt.Errorf("%w: node %q meta %x", errBadMeta, n.Name, n.Meta)
	}
	id := int32(binary.BigEndian.Uint32(n.Meta))
	if id < 0 || n.Name != nodeName(id) {
		return 0, fmt.Errorf("%w: node %q carries id %d", errBadMeta, n.Name, id)
	}
	return id, nil
}

// delegate implements memberlist.Delegate (node meta only), EventDelegate
// and AliveDelegate. Its methods are called by memberlist's goroutines, some
// with memberlist's node lock held: they must never block.
type delegate struct{ m *Membership }

var (
	_ memberlist.Delegate      = delegate{}
	_ memberlist.EventDelegate = delegate{}
	_ memberlist.AliveDelegate = delegate{}
)

func (d delegate) NodeMeta(limit int) []byte {
	if limit < metaLen {
		return nil
	}
	return encodeMeta(d.m.cfg.NodeID)
}

func (delegate) NotifyMsg([]byte)                       {}
func (delegate) GetBroadcasts(_, _ int) [][]byte        { return nil }
func (delegate) LocalState(bool) []byte                 { return nil }
func (delegate) MergeRemoteState(buf []byte, join bool) {}

// NotifyAlive rejects peers that are not kbroker nodes (a name/meta
// mismatch), so they never become members.
func (d delegate) NotifyAlive(n *memberlist.Node) error {
	_, err := nodeID(n)
	return err
}

func (d delegate) NotifyJoin(n *memberlist.Node)  { d.notify(n, true) }
func (d delegate) NotifyLeave(n *memberlist.Node) { d.notify(n, false) }

// NotifyUpdate keeps the member's address current. memberlist calls the
// event delegate with its node lock held, so n's fields are read safely
// here and nowhere else.
func (d delegate) NotifyUpdate(n *memberlist.Node) {
	if id, err := nodeID(n); err == nil {
		d.m.setAddr(id, n.Addr.String())
	}
}

func (d delegate) notify(n *memberlist.Node, alive bool) {
	id, err := nodeID(n)
	if err != nil {
		d.m.log.Warn("ignoring membership event", "err", err)
		return
	}
	d.m.record(id, n.Addr.String(), alive)
}
