package membership

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// addrCheckInterval is how often Run checks whether the address this node
// would advertise has changed (a container reconnected to its network with
// a new IP).
const addrCheckInterval = time.Second

// rejoinLeaveTimeout bounds the leave broadcast of the old incarnation on
// a rejoin: on a node that was cut off it may reach nobody.
const rejoinLeaveTimeout = time.Second

// defaultAddrOf returns how to find the address to advertise now:
// AdvertiseAddr resolved again (a name may move), else, bound to all
// interfaces, the first private IPv4 address of an interface that is up.
// Run advertises what it returns from the start, so the watcher compares
// like with like. Bound to one IP, the address cannot change: nil.
func (m *Membership) defaultAddrOf() func(context.Context) (string, error) {
	switch {
	case m.advHost != "":
		return func(ctx context.Context) (string, error) { return resolveIP(ctx, m.advHost) }
	case m.bindHost == "0.0.0.0":
		return func(context.Context) (string, error) { return privateIP() }
	default:
		return nil
	}
}

// privateIP is the first private IPv4 address of an up, non-loopback
// interface, "" if there is none (the network is disconnected).
func privateIP() (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("listing interfaces: %w", err)
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsPrivate() {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", nil
}

// startJoin joins the seeds other than list's own address in the
// background, owned by wg.
func (m *Membership) startJoin(ctx context.Context, wg *sync.WaitGroup, list *memberlist.Memberlist) {
	self := list.LocalNode().Address()
	if seeds := otherSeeds(m.cfg.Seeds, self, m.cfg.BindAddr, m.cfg.AdvertiseAddr); len(seeds) > 0 {
		wg.Go(func() { m.joinLoop(ctx, list, seeds) })
	}
}

// watchAddress rejoins under the current address whenever it differs from
// the advertised one, until ctx is done. memberlist keeps the address it
// found at start for good: after a network reconnect with a new IP, peers
// would keep probing the old one and report this live node dead, while
// its refutations repeat the old address.
func (m *Membership) watchAddress(ctx context.Context, wg *sync.WaitGroup) {
	t := time.NewTicker(addrCheckInterval)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ip, err := m.addrOf(ctx)
		if err != nil || ip == "" {
			// No address (the interface is gone while disconnected):
			// nothing to advertise yet.
			if msg := fmt.Sprint(err); msg != lastErr {
				m.log.Debug("gossip address unknown", "err", err)
				lastErr = msg
			}
			continue
		}
		lastErr = ""
		if err := m.rejoin(ctx, wg, ip); err != nil {
			m.log.Warn("gossip rejoin failed; retrying", "addr", ip, "err", err)
		}
	}
}

// rejoin replaces the memberlist by one advertising ip, unless it already
// does. The old incarnation leaves first: memberlist accepts a member's new
// address only once the old one has left or been declared dead.
func (m *Membership) rejoin(ctx context.Context, wg *sync.WaitGroup, ip string) error {
	m.shutMu.Lock()
	defer m.shutMu.Unlock()
	m.mu.Lock()
	old, crashed := m.mu.list, m.mu.crashed
	m.mu.Unlock()
	if crashed || ctx.Err() != nil {
		return nil
	}
	port := m.bindPort
	if old != nil {
		local := old.LocalNode()
		if local.Addr.String() == ip {
			return nil
		}
		m.log.Info("gossip address changed; rejoining under the new one", "old", local.Addr, "new", ip)
		port = int(local.Port) // the bound port: keep it even if it was chosen by the OS
		if err := old.Leave(rejoinLeaveTimeout); err != nil {
			m.log.Debug("gossip leave before rejoin", "err", err)
		}
		if err := old.Shutdown(); err != nil {
			m.log.Warn("gossip shutdown before rejoin", "err", err)
		}
		m.mu.Lock()
		m.mu.list = nil
		m.bindPort = port
		m.mu.Unlock()
	}
	conf, err := m.memberlistConfig(ctx, ip, port)
	if err != nil {
		return err
	}
	list, err := memberlist.Create(conf)
	if err != nil {
		return fmt.Errorf("membership: create memberlist on %s:%d advertising %s: %w", m.bindHost, port, ip, err)
	}
	m.mu.Lock()
	m.mu.list = list
	// The new list reports every member it meets as joined; members the
	// old one knew and that died meanwhile must not stay alive here.
	clear(m.mu.alive)
	m.mu.alive[m.cfg.NodeID] = struct{}{}
	m.mu.Unlock()
	m.startJoin(ctx, wg, list)
	return nil
}
