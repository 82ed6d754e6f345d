package replication

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/wire/record"
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
	if version >= 13 {
		ft.TopicID = testTopicID(topic) // the name is not sent
	} else {
		ft.Topic = topic
	}
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

// From v13 a follower fetch names topics by id: a known id reads the
// topic, an unknown one is UNKNOWN_TOPIC_ID.
func TestReadFollowerFetchByTopicID(t *testing.T) {
	c := newTestCluster(t, 1, 2)
	c.images.elect(t, "orders", 0, []int32{1, 2}, 1, 1, 2)
	n1 := c.start(1)
	c.waitApplied(t, n1)
	n1.produce(t, tp0, 1, 2, "a")
	known := followerFetchRequest(15, 2, 0, tp0.Topic, 0, 0)
	unknown := followerFetchRequest(15, 2, 0, "gone", 0, 0)
	for _, tc := range []struct {
		name     string
		req      *kmsg.FetchRequest
		wantCode int16
	}{
		{"known id", known, 0},
		{"unknown id", unknown, kerr.UnknownTopicID.Code},
	} {
		resp, n, _ := n1.m.ReadFollowerFetch(tc.req, FetchPeer{Broker: true}, time.Now())
		rt := resp.Topics[0]
		if rt.TopicID != tc.req.Topics[0].TopicID {
			t.Errorf("%s: response topic id %x, want %x", tc.name, rt.TopicID, tc.req.Topics[0].TopicID)
		}
		if code := rt.Partitions[0].ErrorCode; code != tc.wantCode || (code == 0) != (n > 0) {
			t.Errorf("%s: error %v, %d bytes", tc.name, kerr.ErrorForCode(code), n)
		}
	}
}

// A follower fetch response holds at most MaxBytes, except that the
// first partition with data returns at least one whole batch.
func TestReadFollowerFetchMaxBytes(t *testing.T) {
	c := newTestCluster(t, 1, 2)
	tp1 := TopicPartition{Topic: tp0.Topic, Partition: 1}
	c.images.elect(t, tp0.Topic, 0, []int32{1, 2}, 1, 1, 2)
	c.images.elect(t, tp1.Topic, 1, []int32{1, 2}, 1, 1, 2)
	n1 := c.start(1)
	c.waitApplied(t, n1)
	n1.produce(t, tp0, 1, 3, "a")
	n1.produce(t, tp1, 1, 3, "b")
	req := followerFetchRequest(12, 2, -1, tp0.Topic, 0, 0)
	p1 := req.Topics[0].Partitions[0]
	p1.Partition = 1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p1)
	req.MaxBytes = 1 // less than one batch
	resp, n, _ := n1.m.ReadFollowerFetch(req, FetchPeer{Broker: true}, time.Now())
	got := resp.Topics[0].Partitions
	if len(got) != 2 || got[0].ErrorCode != 0 || got[1].ErrorCode != 0 {
		t.Fatalf("partitions %+v", got)
	}
	// Exactly the first batch: its length field counts the bytes after
	// the offset and length fields (12 bytes).
	recs := got[0].RecordBatches
	if len(recs) < record.HeaderSize || len(recs) != n || int(record.Batch(recs).BatchLength())+12 != len(recs) {
		t.Fatalf("partition 0: %d bytes (response total %d), want exactly one batch", len(recs), n)
	}
	if len(got[1].RecordBatches) != 0 || got[1].RecordBatches == nil {
		t.Fatalf("partition 1: %d bytes past MaxBytes (nil %v)", len(got[1].RecordBatches), got[1].RecordBatches == nil)
	}
}
