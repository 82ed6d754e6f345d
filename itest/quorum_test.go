package itest

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
)

// quorumView is `kbroker admin quorum describe --output json`.
type quorumView struct {
	LeaderID int32 `json:"leaderId"`
	Replicas []struct {
		ID     int32  `json:"id"`
		Status string `json:"status"`
	} `json:"replicas"`
}

func (q quorumView) ids(observer bool) []int32 {
	var out []int32
	for _, r := range q.Replicas {
		if (r.Status == "Observer") == observer {
			out = append(out, r.ID)
		}
	}
	slices.Sort(out)
	return out
}

func quorumAdmin(addr string, args ...string) (string, error) {
	out, err := exec.Command(brokerBin, append(append([]string{"admin", "quorum"}, args...),
		"--bootstrap-server", addr, "--timeout", "20s")...).CombinedOutput()
	return string(out), err
}

// waitQuorumView polls `quorum describe` until it shows voters and
// observers.
func waitQuorumView(t *testing.T, addr string, voters, observers []int32) quorumView {
	t.Helper()
	var q quorumView
	testutil.Eventually(t, 30*time.Second, func() error {
		out, err := quorumAdmin(addr, "describe", "--output", "json")
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		q = quorumView{}
		if err := json.Unmarshal([]byte(out), &q); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		if !slices.Equal(q.ids(false), voters) || !slices.Equal(q.ids(true), observers) {
			return fmt.Errorf("voters %v observers %v", q.ids(false), q.ids(true))
		}
		return nil
	}, "quorum describe: voters %v observers %v", voters, observers)
	return q
}

// The controller replacement of docs/OPERATIONS.md with the binary: a fourth node
// with the controller role outside controller.quorum.voters is an
// observer, `quorum add-voter` makes it a voter, `quorum remove-voter`
// removes the active controller, and the roles survive a kill -9 and
// restart of the new voter. An idempotent acks=all producer writes to an
// RF=3 topic throughout and keeps being acknowledged after each step;
// every acknowledged record reads back once at its offset and the
// replicas are byte-identical.
func TestQuorumReplaceVoter(t *testing.T) {
	const parts = 6
	c := startCluster(t, 3, "min.insync.replicas=2")
	keepLogs(t, c)
	topic := topicName(t)
	createReplicated(t, c, topic, parts, 3, nil)
	load := startLoad(t, c, topic, 2, 10*time.Millisecond, 1_000_000)
	load.waitAcks(t, 100)
	ports := testutil.MustReservePorts(t, 3)
	four := c.newNode(4, ports.Addr(0), ports.Addr(1), ports.Addr(2))
	c.brokers = append(c.brokers, four)
	ports.MustRelease(t)
	four.start()
	addr := c.node(1).addr

	waitQuorumView(t, addr, []int32{1, 2, 3}, []int32{4})
	if out, err := quorumAdmin(addr, "add-voter", "--id", "4"); err != nil {
		t.Fatalf("add-voter 4: %v\n%s", err, out)
	}
	q := waitQuorumView(t, addr, []int32{1, 2, 3, 4}, nil)
	load.waitAcks(t, 100)

	old := q.LeaderID
	if out, err := quorumAdmin(four.addr, "remove-voter", "--id", fmt.Sprint(old)); err != nil {
		t.Fatalf("remove-voter %d (the active controller): %v\n%s", old, err, out)
	}
	var rest []int32
	for _, id := range []int32{1, 2, 3, 4} {
		if id != old {
			rest = append(rest, id)
		}
	}
	if q := waitQuorumView(t, four.addr, rest, []int32{old}); q.LeaderID == old {
		t.Fatalf("node %d still leads after its removal", old)
	}
	load.waitAcks(t, 100)

	four.kill9()
	four.start()
	waitQuorumView(t, four.addr, rest, []int32{old})
	load.waitAcks(t, 100)

	load.finish(t)
	m := c.waitConverged(30*time.Second, "full ISR", fullISR(c, topic, parts, 3))
	checkLogOnce(t, load.acks, consumeAll(t, c.node(2), topic))
	compareAssigned(t, c, m, topic, endOffsets(t, c.node(2), topic))
}
