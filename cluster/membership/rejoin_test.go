package membership

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
)

// A node whose address changes (a container reconnected with a new IP)
// rejoins under the new one: its peers learn the new address and keep it
// alive. 127.0.0.2 reaches a socket bound to 0.0.0.0 through loopback.
func TestRejoinAfterAddressChange(t *testing.T) {
	n1 := start(t, testConfig(1, "127.0.0.1:0"))
	seed := n1.addr(t)
	n2 := start(t, testConfig(2, "127.0.0.1:0", seed))
	var ip atomic.Value
	ip.Store("127.0.0.1")
	cfg3 := testConfig(3, "0.0.0.0:0", seed)
	cfg3.AdvertiseAddr = "127.0.0.1"
	n3 := startWith(t, cfg3, func(m *Membership) {
		m.addrOf = func(context.Context) (string, error) { return ip.Load().(string), nil }
	})
	all := []int32{1, 2, 3}
	for _, n := range []*testNode{n1, n2, n3} {
		waitView(t, n, 10*time.Second, all, 1, 2, 3)
	}

	ip.Store("127.0.0.2")
	for _, n := range []*testNode{n1, n2} {
		testutil.Eventually(t, 20*time.Second, func() bool { return n.m.MemberAddr(3) == "127.0.0.2" },
			"node %d to learn node 3's new address", n.m.cfg.NodeID)
	}
	for _, n := range []*testNode{n1, n2, n3} {
		waitView(t, n, 20*time.Second, all, 1, 2, 3)
	}
	// It stays alive at the new address: the peers probe it there.
	testutil.CheckFor(t, 2*time.Second, func() bool {
		return n1.m.MemberAddr(3) == "127.0.0.2" && len(n1.m.Alive()) == 3 && len(n2.m.Alive()) == 3
	}, "node 3 alive at its new address")
}
