package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/replication"
)

func TestBrokerSessionExpiry(t *testing.T) {
	t0 := time.Unix(1_000, 0)
	tests := []struct {
		name    string
		timeout time.Duration
		started bool
		at      time.Duration // after the last success
		want    bool
	}{
		{"not started: nothing to lose", 3 * time.Second, false, time.Hour, false},
		{"no timeout configured", 0, true, time.Hour, false},
		{"within the timeout", 3 * time.Second, true, 3 * time.Second, false},
		{"past the timeout", 3 * time.Second, true, 3*time.Second + time.Millisecond, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := brokerSession{timeout: tc.timeout}
			if tc.started {
				s.start(t0)
			}
			if got := s.expired(t0.Add(tc.at)); got != tc.want {
				t.Fatalf("expired = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBrokerSessionLostOnceAndRenewed(t *testing.T) {
	t0 := time.Unix(1_000, 0)
	s := brokerSession{timeout: time.Second}
	s.start(t0)
	if s.checkLost(t0.Add(time.Second / 2)) {
		t.Fatal("lost within the timeout")
	}
	if !s.checkLost(t0.Add(2 * time.Second)) {
		t.Fatal("not lost past the timeout")
	}
	if s.checkLost(t0.Add(3 * time.Second)) {
		t.Fatal("the loss was reported twice")
	}
	if !s.renewed(t0.Add(4 * time.Second)) {
		t.Fatal("renewal did not report the earlier loss")
	}
	if s.expired(t0.Add(4*time.Second + time.Second/2)) {
		t.Fatal("expired right after a renewal")
	}
}

// A leader whose heartbeats fail for longer than broker.session.timeout.ms
// (here: its quorum of two lost the other voter, so no controller answers)
// stops leading: the acks=all produce waiting for the follower is answered
// NOT_LEADER_OR_FOLLOWER instead of being held until its 60 s timeout, and
// a new produce, even acks=1, is refused rather than appended to a log
// nobody will replicate.
func TestLeaderWithoutSessionRefusesProduce(t *testing.T) {
	nodes := startPair(t, "broker.session.timeout.ms=2000", "broker.heartbeat.interval.ms=200")
	leader, follower := nodes[0], nodes[1]
	tp := replication.TopicPartition{Topic: "no-session", Partition: 0}

	cl, err := kgo.NewClient(kgo.SeedBrokers(leader.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	createPartitionOn(ctx, t, cl, tp.Topic, 1, 2)
	testutil.Eventually(t, 20*time.Second, func() bool {
		part, err := leader.replicas.Partition(tp)
		return err == nil && part.IsLeader() && len(part.State().ISR) == 2
	}, "node 1 to lead with ISR [1 2]")

	c := kafkatest.Dial(t, leader.addr)
	// While the session holds, acks=1 is accepted.
	if code := produceCode(c.RoundTrip(kafkatest.ProduceRequest(9, 1, tp.Topic, map[int32][]byte{0: testBatch(t, 1, -1, -1, -1)}))); code != 0 {
		t.Fatalf("acks=1 produce with a live session: %v", kerr.ErrorForCode(code))
	}

	follower.stop(t)
	req := kafkatest.ProduceRequest(9, -1, tp.Topic, map[int32][]byte{0: testBatch(t, 5, -1, -1, -1)})
	req.TimeoutMillis = 60_000
	corr := c.Send(req)
	parked := req.ResponseKind()
	c.Recv(corr, parked) // within recv's 10 s, far below the 60 s timeout
	if code := produceCode(parked); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("parked acks=all produce answered %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
	if !leader.sessionLost() {
		t.Fatal("the parked produce was answered but the session is not lost")
	}
	if code := produceCode(c.RoundTrip(kafkatest.ProduceRequest(9, 1, tp.Topic, map[int32][]byte{0: testBatch(t, 1, -1, -1, -1)}))); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("acks=1 produce without a session answered %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
}

// produceCode is the error code of a one-partition produce response.
func produceCode(r kmsg.Response) int16 {
	return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}
