package kafkaapi

// Leader hints (KIP-951): a Produce (v10+) or Fetch (v12+) partition
// refused with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries the
// leader and leader epoch this broker knows (CurrentLeader), and a
// Produce or (v16+) Fetch response the leaders' endpoints (NodeEndpoints), so a client
// can send to the new leader at once instead of first refreshing its
// metadata. Hints come from the metadata image; a partition without a
// known, unfenced leader reachable on the request's listener gets none.

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/metadata"
)

// Versions that carry the hints.
const (
	produceLeaderHintVersion  = 10
	fetchLeaderHintVersion    = 12
	fetchNodeEndpointsVersion = 16
)

// wantsLeaderHint reports whether a partition error is one that a
// leader hint helps with.
func wantsLeaderHint(code int16) bool {
	return code == kerr.NotLeaderForPartition.Code || code == kerr.FencedLeaderEpoch.Code
}

// leaderHint is the image's leader of topic/partition with its epoch and
// its endpoint on listener, if it is a live broker there (not one whose
// connection broke: see refusingBrokers).
func (h *Handlers) leaderHint(img *metadata.Image, topic string, partition int32, listener string) (leader, epoch int32, ep metadata.Endpoint, ok bool) {
	p, found := img.Partition(topic, partition)
	if !found || p.Leader < 0 {
		return -1, -1, ep, false
	}
	if b, found := img.Brokers[p.Leader]; !found || b.Fenced || h.liveness.RefusingLeader(img, p.Leader, time.Now()) {
		return -1, -1, ep, false
	}
	ep, ok = img.BrokerEndpoint(p.Leader, listener)
	return p.Leader, p.LeaderEpoch, ep, ok
}

// addProduceLeaderHints fills CurrentLeader for every refused partition
// of resp and NodeEndpoints for their leaders (each once), for v10+. A
// refusal that points the client at another leader (of any version)
// keeps a controlled shutdown's drain going (noteRedirect).
func (h *Handlers) addProduceLeaderHints(resp *kmsg.ProduceResponse, listener string) {
	img := h.store.Image()
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		for pi := range t.Partitions {
			rp := &t.Partitions[pi]
			if !wantsLeaderHint(rp.ErrorCode) {
				continue
			}
			leader, epoch, ep, ok := h.leaderHint(img, t.Topic, rp.Partition, listener)
			if !ok {
				continue
			}
			h.liveness.NoteRedirect(leader)
			if resp.Version < produceLeaderHintVersion {
				continue
			}
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = leader, epoch
			if slices.ContainsFunc(resp.Brokers, func(b kmsg.ProduceResponseBroker) bool { return b.NodeID == leader }) {
				continue
			}
			b := kmsg.NewProduceResponseBroker()
			b.NodeID, b.Host, b.Port = leader, ep.Host, ep.Port
			if rack := img.Brokers[leader].Rack; rack != "" {
				b.Rack = &rack
			}
			resp.Brokers = append(resp.Brokers, b)
		}
	}
}

// addFetchLeaderHint fills CurrentLeader of a refused consumer fetch
// partition, for v12+, and from v16 the leader's endpoint in resp's
// NodeEndpoints (each leader once); before v16 the client looks the
// leader's address up in its metadata.
func (h *Handlers) addFetchLeaderHint(resp *kmsg.FetchResponse, img *metadata.Image, topic string, rp *kmsg.FetchResponseTopicPartition, listener string) {
	if !wantsLeaderHint(rp.ErrorCode) {
		return
	}
	leader, epoch, ep, ok := h.leaderHint(img, topic, rp.Partition, listener)
	if !ok {
		return
	}
	h.liveness.NoteRedirect(leader)
	if resp.Version < fetchLeaderHintVersion {
		return
	}
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = leader, epoch
	if resp.Version < fetchNodeEndpointsVersion || slices.ContainsFunc(resp.Brokers, func(b kmsg.FetchResponseBroker) bool { return b.NodeID == leader }) {
		return
	}
	b := kmsg.NewFetchResponseBroker()
	b.NodeID, b.Host, b.Port = leader, ep.Host, ep.Port
	if rack := img.Brokers[leader].Rack; rack != "" {
		b.Rack = &rack
	}
	resp.Brokers = append(resp.Brokers, b)
}
