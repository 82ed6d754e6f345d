package kafkaapi

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/metadata"
)

// defaultServerConfig is the connection layer's config of a node with
// every key at its default.
func defaultServerConfig() server.Config {
	cfg := config.Default()
	return server.ConfigFrom(&cfg)
}

// refusingBrokers is a Liveness whose session holds and whose listed
// brokers refuse this node's fetchers while unfenced.
type refusingBrokers map[int32]bool

func (r refusingBrokers) LeaderCheck() error { return nil }
func (r refusingBrokers) SessionLost() bool  { return false }
func (r refusingBrokers) AnyRefusing() bool  { return len(r) > 0 }
func (r refusingBrokers) NoteRedirect(int32) {}

func (r refusingBrokers) RefusingLeader(img *metadata.Image, leader int32, _ time.Time) bool {
	b, ok := img.Brokers[leader]
	return ok && !b.Fenced && r[leader]
}

func (r refusingBrokers) AwaitFailover(context.Context, *kmsg.MetadataRequest) *metadata.Image {
	return nil
}
