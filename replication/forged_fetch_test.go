package replication

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/metadata"
)

// followerFetchRequest is a one-partition follower fetch as replica
// (with broker epoch brokerEpoch, sent from v15 on) at offset.
func followerFetchRequest(version int16, replica int32, brokerEpoch int64, topic string, offset int64, leaderEpoch int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID = replica
	req.ReplicaState.ID, req.ReplicaState.Epoch = replica, brokerEpoch
	req.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset = offset
	fp.PartitionMaxBytes = 1 << 20
	fp.CurrentLeaderEpoch = leaderEpoch
	fp.LastFetchedEpoch = -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	return req
}

// A follower fetch that names a replica the leader cannot vouch for is
// refused with Kafka's code, and neither the replica's recorded log end
// offset nor the high watermark moves. Each case leads its own topic
// with replicas [1, follower] and ISR [1, follower]; broker 1 holds 3
// records that only the follower's fetch at 3 could commit.
func TestForgedFollowerFetchRefused(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	// Broker 4 is registered and fenced; broker 5 registered at broker
	// epoch 7; broker 6 registered (epoch 0, the fake images' default).
	// Broker 9 is not registered at all.
	c.images.setBroker(4, func(b *metadata.Broker) { b.Fenced = true })
	c.images.setBroker(5, func(b *metadata.Broker) { b.Epoch = 7 })
	c.images.setBroker(6, func(*metadata.Broker) {})
	cases := []struct {
		name     string
		replicas []int32 // leader 1 first; all in the ISR
		fetcher  int32
		version  int16
		epoch    int64 // broker epoch sent from v15
		leaderEp int32 // CurrentLeaderEpoch sent
		peer     FetchPeer
		wantCode int16
		wantHW   int64
	}{
		{"not in the replica set, with a leader epoch", []int32{1, 2}, 3, 12, -1, 0, FetchPeer{Broker: true}, kerr.UnknownLeaderEpoch.Code, 0},
		{"not in the replica set, no leader epoch", []int32{1, 2}, 3, 12, -1, -1, FetchPeer{Broker: true}, kerr.NotLeaderForPartition.Code, 0},
		{"in the replica set, not a registered broker", []int32{1, 9}, 9, 12, -1, 0, FetchPeer{Broker: true}, kerr.NotLeaderForPartition.Code, 0},
		{"registered but fenced", []int32{1, 4}, 4, 12, -1, 0, FetchPeer{Broker: true}, kerr.NotLeaderForPartition.Code, 0},
		{"stale broker epoch (KIP-903)", []int32{1, 5}, 5, 15, 6, 0, FetchPeer{Broker: true}, kerr.NotLeaderForPartition.Code, 0},
		{"newer broker epoch than the image's", []int32{1, 5}, 5, 15, 8, 0, FetchPeer{Broker: true}, kerr.NotLeaderForPartition.Code, 0},
		{"connection not vouched for as a broker", []int32{1, 6}, 6, 12, -1, 0, FetchPeer{}, kerr.TopicAuthorizationFailed.Code, 0},
		// The controls: the same fetch from a replica the leader can
		// vouch for commits the records, so the cases above would see
		// the high watermark move if the checks were missing.
		{"registered unfenced replica", []int32{1, 6}, 6, 12, -1, 0, FetchPeer{Broker: true}, 0, 3},
		{"registered unfenced replica at its broker epoch", []int32{1, 5}, 5, 15, 7, 0, FetchPeer{Broker: true}, 0, 3},
	}
	for i, tc := range cases {
		c.images.elect(t, fmt.Sprint("t", i), 0, tc.replicas, 1, tc.replicas...)
	}
	n1 := c.start(1)
	c.waitApplied(t, n1)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tp := TopicPartition{Topic: fmt.Sprint("t", i), Partition: 0}
			n1.produce(t, tp, 1, 3, "a")
			p := n1.partition(t, tp)
			if hw := p.HighWatermark(); hw != 0 {
				t.Fatalf("high watermark %d before the fetch, want 0", hw)
			}
			req := followerFetchRequest(tc.version, tc.fetcher, tc.epoch, tp.Topic, 3, tc.leaderEp)
			resp, _, answerNow := n1.m.ReadFollowerFetch(req, tc.peer, time.Now())
			rp := resp.Topics[0].Partitions[0]
			if rp.ErrorCode != tc.wantCode {
				t.Fatalf("error %v, want %v", kerr.ErrorForCode(rp.ErrorCode), kerr.ErrorForCode(tc.wantCode))
			}
			if answerNow != (tc.wantCode != 0) {
				t.Errorf("answer now %v with error %d", answerNow, rp.ErrorCode)
			}
			if hw := p.HighWatermark(); hw != tc.wantHW {
				t.Fatalf("high watermark %d after the fetch, want %d", hw, tc.wantHW)
			}
			p.mu.RLock()
			leo, recorded := p.mu.followerLEO[tc.fetcher]
			p.mu.RUnlock()
			if recorded != (tc.wantCode == 0) {
				t.Fatalf("follower %d log end offset recorded %v (%d) after error %d", tc.fetcher, recorded, leo, rp.ErrorCode)
			}
		})
	}
}
