package bench

// Growing the bench cluster: a broker-only node (process.roles=broker)
// that joins the running three, as an operator adds a broker before
// moving partitions onto it (kbroker bench --mode reassign).

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// addBrokerOnly starts node len(nodes)+1 with process.roles=broker,
// configured like node 1 (the same voters, gossip seeds and extra
// settings) on new ports, and waits until it reports ready.
func (c *benchCluster) addBrokerOnly(ctx context.Context) (*benchNode, error) {
	ports, err := freeTCPPorts(4)
	if err != nil {
		return nil, err
	}
	id := int32(len(c.nodes) + 1)
	dir := filepath.Dir(c.nodes[0].dataDir)
	n := &benchNode{
		id:        id,
		addr:      fmt.Sprintf("127.0.0.1:%d", ports[0]),
		adminAddr: fmt.Sprintf("127.0.0.1:%d", ports[3]),
		dataDir:   filepath.Join(dir, fmt.Sprintf("node-%d", id)),
		logPath:   filepath.Join(dir, fmt.Sprintf("node-%d.log", id)),
	}
	own := map[string]string{
		"node.id":              fmt.Sprint(id),
		"listeners":            fmt.Sprintf("PLAINTEXT://%s,CONTROLLER://127.0.0.1:%d", n.addr, ports[1]),
		"advertised.listeners": "PLAINTEXT://" + n.addr,
		"log.dirs":             n.dataDir,
		"gossip.listener":      fmt.Sprintf("127.0.0.1:%d", ports[2]),
		"admin.listener":       n.adminAddr,
	}
	n.args = []string{"serve"}
	for i := 0; i+1 < len(c.nodes[0].args); i++ {
		if c.nodes[0].args[i] != "--set" {
			continue
		}
		kv := c.nodes[0].args[i+1]
		k, _, _ := strings.Cut(kv, "=")
		if v, ok := own[k]; ok {
			kv = k + "=" + v
		}
		n.args = append(n.args, "--set", kv)
	}
	n.args = append(n.args, "--set", "process.roles=broker")
	c.nodes = append(c.nodes, n)
	if err := n.start(c.bin); err != nil {
		return n, err
	}
	return n, n.waitReady(ctx)
}
