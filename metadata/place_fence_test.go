package metadata

import (
	"context"
	"testing"
	"time"
)

// A broker fenced while a CreateTopics is between planning (it was alive
// then) and proposing must not end up leading the new topic's
// partitions: its fence record, already applied, would never move them.
// The fence waits for the creation (Store.placeMu), so it applies after
// it and moves the leaderships as for any other partition.
func TestCreateTopicsDoesNotRaceFence(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.ready()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader := c.leader()
	c.registerBrokers(ctx, leader, 1, 2)

	planned := make(chan struct{})
	fenced := make(chan error, 1)
	leader.planned = func() {
		close(planned)
		// Give the fence every chance to go first; with placeMu it
		// cannot, and this wait ends on the timer.
		select {
		case err := <-fenced:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(time.Second):
		}
	}
	t.Cleanup(func() { leader.planned = nil })
	epoch := leader.Image().Brokers[2].Epoch
	go func() {
		<-planned
		err := leader.FenceBroker(ctx, 2, epoch)
		fenced <- err
		fenced <- err // one for the hook, one for the test
	}()
	assign := map[int32][]int32{0: {2, 1}}
	if errs := leader.CreateTopics(ctx, []TopicSpec{{Name: "raced", NumPartitions: -1, ReplicationFactor: -1, Assignments: assign}}, false); errs[0] != nil {
		t.Fatal(errs[0])
	}
	select {
	case err := <-fenced:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the fence never finished")
	}
	img := c.converged()
	p := img.Topics["raced"].Partitions[0]
	if !img.Brokers[2].Fenced {
		t.Fatal("broker 2 not fenced")
	}
	if p.Leader != 1 {
		t.Fatalf("partition led by %d with ISR %v after broker 2 was fenced, want broker 1", p.Leader, p.ISR)
	}
}
