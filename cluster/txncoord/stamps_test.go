package txncoord

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/cluster/txn"
	"github.com/kbroker/kbroker/internal/wallclock"
)

// TestTimeoutAcrossClockJumps: a transaction's timeout is a duration on
// the monotonic clock. While its coordinator lives, a jump of the node's
// wall clock neither aborts it early nor keeps it open; the state log
// carries its start as the node's time of day, and a coordinator that
// loads it on a node whose clock agrees with the writer's ages it as the
// writer would have.
func TestTimeoutAcrossClockJumps(t *testing.T) {
	defer wallclock.SetOffset(0)
	const timeout = 10 * time.Second
	cases := []struct {
		name              string
		writerOffset      time.Duration // the writing node's clock offset
		jump              time.Duration // the offset after the write (a jump)
		loaderOffset      time.Duration // the loading node's offset
		elapsedAtLoad     time.Duration
		wantExpiredAtLoad bool
	}{
		{"no jumps", 0, 0, 0, 2 * time.Second, false},
		{"backwards 2h after the start, loaded by the same node", 0, -2 * time.Hour, 0, 2 * time.Second, false},
		{"forwards 3h after the start, loaded by the same node", 0, 3 * time.Hour, 0, 2 * time.Second, false},
		{"written while 40m behind, loaded by a node 40m behind", -40 * time.Minute, 0, -40 * time.Minute, 2 * time.Second, false},
		{"written 40m behind, loaded by a node on time: 40m old", -40 * time.Minute, 0, 0, 2 * time.Second, true},
		{"loaded after the timeout", 0, time.Hour, 0, 11 * time.Second, true},
		// The writer's clock ran 3h ahead: the timeout counts from the load,
		// not 3h later.
		{"written 3h ahead, loaded by a node on time", 3 * time.Hour, 0, 0, 2 * time.Second, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			m := &txn.Metadata{ProducerID: 7, ProducerEpoch: 1, Timeout: timeout, State: txn.Ongoing,
				Start: start, LastUpdate: start, Partitions: map[txn.TopicPartition]struct{}{{Topic: "t", Partition: 0}: {}}}
			wallclock.SetOffset(tc.writerOffset)
			value := txn.Value(stamped(m))
			if got, want := stamped(m).Start.UnixMilli(), start.Add(tc.writerOffset).UnixMilli(); got != want {
				t.Fatalf("stamped start %d, want %d", got, want)
			}
			// The live coordinator: the wall clock jumps, the timeout does not.
			wallclock.SetOffset(tc.jump)
			if m.Expired(start.Add(timeout - time.Second)) {
				t.Fatal("expired before its timeout after the jump")
			}
			if !m.Expired(start.Add(timeout + time.Second)) {
				t.Fatal("not expired after its timeout after the jump")
			}
			// Another coordinator loads it.
			_, loaded, err := txn.Decode(txn.Key("id"), value)
			if err != nil {
				t.Fatal(err)
			}
			wallclock.SetOffset(tc.loaderOffset)
			mono := start.Add(tc.elapsedAtLoad)
			unstamp(loaded, mono, wallclock.Stamp(mono))
			if got := loaded.Expired(mono); got != tc.wantExpiredAtLoad {
				t.Fatalf("expired at load = %v, want %v (start %v, now %v)", got, tc.wantExpiredAtLoad, loaded.Start, mono)
			}
			if !tc.wantExpiredAtLoad && !loaded.Expired(mono.Add(timeout+time.Second)) {
				t.Fatal("loaded transaction not expired a timeout after its load")
			}
		})
	}
}
