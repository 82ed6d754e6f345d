package cluster

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/wire/record"
)

// txnNodeSets are small internal topics for the transaction tests.
var txnNodeSets = []string{
	"transaction.state.log.num.partitions=3",
	"offsets.topic.num.partitions=3",
	"group.initial.rebalance.delay.ms=0",
	"transaction.abort.timed.out.transaction.cleanup.interval.ms=100",
}

func txnProducer(t *testing.T, addr, id, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.TransactionalID(id),
		kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(20 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// consumeValues reads topic from the start with the isolation level
// until want values arrived (or 20 s passed), and returns them.
func consumeValues(t *testing.T, addr, topic string, committed bool, want int) []string {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

func txnProduce(t *testing.T, cl *kgo.Client, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("producing %q: %v", v, err)
		}
	}
}

func endTxn(t *testing.T, cl *kgo.Client, commit kgo.TransactionEndTry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.EndTransaction(ctx, commit); err != nil {
		t.Fatalf("ending transaction (commit %v): %v", commit, err)
	}
}

// A transactional producer commits, aborts and commits again; a
// read_committed consumer sees the committed records only, in order, and a
// read_uncommitted one sees all of them.
func TestTransactionsCommitAndAbort(t *testing.T) {
	node := startNode(t, "", txnNodeSets...)
	createTopic(t, node.addr, "txn-out", 1, nil)
	p := txnProducer(t, node.addr, "t-commit-abort", "txn-out")
	for _, step := range []struct {
		values []string
		commit kgo.TransactionEndTry
	}{
		{[]string{"c1", "c2", "c3"}, kgo.TryCommit},
		{[]string{"a1", "a2"}, kgo.TryAbort},
		{[]string{"c4"}, kgo.TryCommit},
	} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		txnProduce(t, p, step.values...)
		endTxn(t, p, step.commit)
	}
	if got, want := consumeValues(t, node.addr, "txn-out", true, 4), []string{"c1", "c2", "c3", "c4"}; !slices.Equal(got, want) {
		t.Errorf("read_committed consumer got %q, want %q", got, want)
	}
	if got := consumeValues(t, node.addr, "txn-out", false, 6); len(got) != 6 {
		t.Errorf("read_uncommitted consumer got %q, want all 6 records", got)
	}

	// DescribeTransactions and ListTransactions see the finished
	// transaction once its markers are written.
	adm := newAdmin(t, node.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	testutil.Eventually(t, 10*time.Second, func() bool {
		d, err := adm.DescribeTransactions(ctx, "t-commit-abort")
		if err != nil {
			return false
		}
		desc, ok := d["t-commit-abort"]
		return ok && desc.Err == nil && desc.State == "CompleteCommit" && desc.ProducerID >= 0 && len(desc.Topics) == 0
	}, "the transaction completes")
	listed, err := adm.ListTransactions(ctx, nil, []string{"CompleteCommit"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed["t-commit-abort"]; !ok || len(listed) != 1 {
		t.Errorf("ListTransactions(CompleteCommit) = %v, want t-commit-abort alone", listed)
	}
	if none, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"}); err != nil || len(none) != 0 {
		t.Errorf("ListTransactions(Ongoing) = %v, %v; want none", none, err)
	}

	// v2 filters by a transactional id pattern, matched whole.
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, tc := range []struct {
		pattern string
		want    []string
		code    int16
	}{
		{"t-commit-.*", []string{"t-commit-abort"}, 0},
		{"t-commit", nil, 0}, // a prefix is not a whole match
		{"", []string{"t-commit-abort"}, 0},
		{"t-(", nil, kerr.InvalidRegularExpression.Code},
	} {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version = 2
		req.TransactionalIDPattern = kmsg.StringPtr(tc.pattern)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range resp.TransactionStates {
			got = append(got, s.TransactionalID)
		}
		if resp.ErrorCode != tc.code || !slices.Equal(got, tc.want) {
			t.Errorf("ListTransactions v2 pattern %q: code %d, %v; want %d, %v", tc.pattern, resp.ErrorCode, got, tc.code, tc.want)
		}
	}
}

// Two producers with the same transactional id: the second's
// InitProducerId aborts the first's open transaction and fences it; the
// first's later writes and its commit fail, and nothing it wrote is
// visible to read_committed consumers.
func TestTransactionsFencing(t *testing.T) {
	node := startNode(t, "", txnNodeSets...)
	createTopic(t, node.addr, "txn-fence", 1, nil)
	old := txnProducer(t, node.addr, "t-fence", "txn-fence")
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	txnProduce(t, old, "old-1")

	cur := txnProducer(t, node.addr, "t-fence", "txn-fence")
	if err := cur.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	txnProduce(t, cur, "new-1")
	endTxn(t, cur, kgo.TryCommit)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	perr := old.ProduceSync(ctx, &kgo.Record{Value: []byte("old-2")}).FirstErr()
	eerr := old.EndTransaction(ctx, kgo.TryCommit)
	fenced := func(err error) bool {
		return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
	}
	if !fenced(perr) && !fenced(eerr) {
		t.Errorf("the fenced producer's produce (%v) and commit (%v): want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", perr, eerr)
	}
	if eerr == nil {
		t.Errorf("the fenced producer committed")
	}
	t.Logf("fenced producer: produce %v, commit %v", perr, eerr)
	// A second committed transaction after the fenced attempts: anything
	// of the old producer would show up before it.
	if err := cur.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	txnProduce(t, cur, "new-2")
	endTxn(t, cur, kgo.TryCommit)
	got := consumeValues(t, node.addr, "txn-fence", true, 2)
	if !slices.Equal(got, []string{"new-1", "new-2"}) {
		t.Errorf("read_committed consumer got %q, want [new-1 new-2]", got)
	}
}

// A transaction begun and never ended is aborted after its timeout, which
// unblocks read_committed consumers of its partition.
func TestTransactionTimeoutAborts(t *testing.T) {
	node := startNode(t, "", txnNodeSets...)
	createTopic(t, node.addr, "txn-timeout", 1, nil)
	p := txnProducer(t, node.addr, "t-timeout", "txn-timeout", kgo.TransactionTimeout(time.Second))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	txnProduce(t, p, "open")

	plain, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.DefaultProduceTopic("txn-timeout"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	txnProduce(t, plain, "after")

	if got := consumeValues(t, node.addr, "txn-timeout", true, 1); !slices.Equal(got, []string{"after"}) {
		t.Errorf("read_committed consumer got %q, want [after] once the open transaction timed out", got)
	}
	// The counter moves when the abort's last step is durable, which may
	// come just after the markers a consumer already sees.
	deadline := time.Now().Add(10 * time.Second)
	for node.txns.TimedOutAborts() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := node.txns.TimedOutAborts(); n != 1 {
		t.Errorf("%d transactions aborted by timeout, want 1", n)
	}
}

// Consume-transform-produce with kgo.GroupTransactSession between two
// topics: every input record appears exactly once in the output and the
// group's committed offsets cover the input.
func TestGroupTransactSessionExactlyOnce(t *testing.T) {
	const n = 60
	node := startNode(t, "", txnNodeSets...)
	createTopic(t, node.addr, "eos-in", 2, nil)
	createTopic(t, node.addr, "eos-out", 2, nil)
	in, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.DefaultProduceTopic("eos-in"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var values []string
	for i := range n {
		values = append(values, strconv.Itoa(i))
	}
	txnProduce(t, in, values...)

	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(node.addr), kgo.TransactionalID("eos-tx"),
		kgo.ConsumerGroup("eos-group"), kgo.ConsumeTopics("eos-in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic("eos-out"),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	processed := 0
	deadline := time.Now().Add(25 * time.Second)
	for processed < n && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := sess.PollFetches(ctx)
		cancel()
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
		for _, r := range recs {
			sess.Produce(ctx, &kgo.Record{Value: append([]byte("out-"), r.Value...)}, nil)
		}
		committed, err := sess.End(ctx, kgo.TryCommit)
		cancel()
		if err != nil {
			t.Fatalf("ending the transaction: %v", err)
		}
		if committed {
			processed += len(recs)
		}
	}
	got := consumeValues(t, node.addr, "eos-out", true, n)
	sort.Strings(got)
	var want []string
	for _, v := range values {
		want = append(want, "out-"+v)
	}
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("output has %d records, want each of %d inputs once: %q", len(got), n, got)
	}
	adm := newAdmin(t, node.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var offs kadm.OffsetResponses
	testutil.Eventually(t, 10*time.Second, func() bool {
		offs, err = adm.FetchOffsets(ctx, "eos-group")
		if err != nil {
			return false
		}
		total := int64(0)
		offs.Each(func(o kadm.OffsetResponse) { total += o.At })
		return total == n
	}, "the group's offsets cover the input")
	t.Logf("group offsets: %v", offs)
}

// txnBatch is a transactional batch of n records.
func txnBatch(t *testing.T, n int, pid int64, epoch int16, seq int32) []byte {
	t.Helper()
	b := record.Batch(testBatch(t, n, pid, epoch, seq))
	recs := make([]record.Record, 0, n)
	if err := record.Iterate(b, 1<<20, func(r *record.Record) error {
		recs = append(recs, record.Record{OffsetDelta: r.OffsetDelta, Key: append([]byte(nil), r.Key...), Value: append([]byte(nil), r.Value...)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	out, err := record.Build(record.BatchSpec{PartitionLeaderEpoch: -1, Attributes: record.TransactionalFlag,
		BaseTimestamp: time.Now().UnixMilli(), ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// KIP-890 part 1: a transactional batch to a partition the producer did
// not add to its transaction is refused with INVALID_TXN_STATE; once
// AddPartitionsToTxn added it, the same batch is accepted.
func TestTransactionalProduceVerified(t *testing.T) {
	node := startNode(t, "", txnNodeSets...)
	createTopic(t, node.addr, "verify", 2, nil)
	c := kafkatest.Dial(t, node.addr)
	const id = "t-verify"
	var pid int64
	var epoch int16
	testutil.Eventually(t, 15*time.Second, func() bool {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version = 4
		fc.CoordinatorType = 1
		fc.CoordinatorKeys = []string{id}
		if c.RoundTrip(fc).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode != 0 {
			return false
		}
		init := kmsg.NewPtrInitProducerIDRequest()
		init.Version = 4
		init.TransactionalID = kmsg.StringPtr(id)
		init.TransactionTimeoutMillis = 60000
		resp := c.RoundTrip(init).(*kmsg.InitProducerIDResponse)
		pid, epoch = resp.ProducerID, resp.ProducerEpoch
		return resp.ErrorCode == 0
	}, "InitProducerId with a transactional id")
	produce := func(partition int32, seq int32) int16 {
		req := kafkatest.ProduceRequest(9, -1, "verify", map[int32][]byte{0: txnBatch(t, 2, pid, epoch, seq)})
		req.Topics[0].Partitions[0].Partition = partition
		req.TransactionID = kmsg.StringPtr(id)
		return partitionErrors(c.RoundTrip(req).(*kmsg.ProduceResponse))[0]
	}
	if code := produce(0, 0); code != kerr.InvalidTxnState.Code {
		t.Fatalf("produce before AddPartitionsToTxn: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version = 3
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, pid, epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "verify", Partitions: []int32{0}}}
	if code := c.RoundTrip(add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
	}
	if code := produce(0, 0); code != 0 {
		t.Fatalf("produce after AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
	}
	// ListOffsets latest: the last stable offset (the open transaction's
	// first offset) for read_committed, the high watermark otherwise.
	latest := func(isolation int8) int64 {
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.Version = 5
		lo.IsolationLevel = isolation
		lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "verify", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: -1}}}}
		return c.RoundTrip(lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].Offset
	}
	if committed, uncommitted := latest(1), latest(0); committed != 0 || uncommitted != 2 {
		t.Errorf("ListOffsets latest during the transaction: read_committed %d, read_uncommitted %d; want 0 and 2", committed, uncommitted)
	}
	if code := produce(1, 0); code != kerr.InvalidTxnState.Code {
		t.Fatalf("produce to a partition not added: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	// Another epoch than the coordinator's is fenced at AddPartitionsToTxn
	// (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH before v2).
	add.ProducerEpoch = epoch + 1
	for _, tc := range []struct {
		version int16
		want    *kerr.Error
	}{{1, kerr.InvalidProducerEpoch}, {3, kerr.ProducerFenced}} {
		add.Version = tc.version
		if code := c.RoundTrip(add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; code != tc.want.Code {
			t.Errorf("AddPartitionsToTxn v%d with another epoch: %v, want %v", tc.version, kerr.ErrorForCode(code), tc.want)
		}
	}

	// Transactional offsets: held until the marker, UNSTABLE_OFFSET_COMMIT
	// meanwhile for a RequireStable fetch, committed by EndTxn(commit).
	add.ProducerEpoch, add.Version = epoch, 3
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = id, pid, epoch, "verify-group"
	if code := c.RoundTrip(ao).(*kmsg.AddOffsetsToTxnResponse).ErrorCode; code != 0 {
		t.Fatalf("AddOffsetsToTxn: %v", kerr.ErrorForCode(code))
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		oc := kmsg.NewPtrTxnOffsetCommitRequest()
		oc.Version = 3
		oc.TransactionalID, oc.Group, oc.ProducerID, oc.ProducerEpoch = id, "verify-group", pid, epoch
		oc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "verify", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 42, LeaderEpoch: -1}}}}
		return c.RoundTrip(oc).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode == 0
	}, "TxnOffsetCommit accepted")
	fetch := func() (int64, int16) {
		of := kmsg.NewPtrOffsetFetchRequest()
		of.Version = 7
		of.Group = "verify-group"
		of.RequireStable = true
		of.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "verify", Partitions: []int32{0}}}
		rp := c.RoundTrip(of).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
		return rp.Offset, rp.ErrorCode
	}
	if _, code := fetch(); code != kerr.UnstableOffsetCommit.Code {
		t.Errorf("OffsetFetch(RequireStable) during the transaction: %v, want UNSTABLE_OFFSET_COMMIT", kerr.ErrorForCode(code))
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, epoch, true
	if code := c.RoundTrip(end).(*kmsg.EndTxnResponse).ErrorCode; code != 0 {
		t.Fatalf("EndTxn: %v", kerr.ErrorForCode(code))
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		off, code := fetch()
		return code == 0 && off == 42
	}, "the committed transaction's offset")
	// Two records and the COMMIT marker.
	testutil.Eventually(t, 10*time.Second, func() bool { return latest(1) == 3 }, "the last stable offset past the marker")
}

// A restart between TxnOffsetCommit and EndTxn: the restarted broker
// reloads the open transaction from __transaction_state and its pending
// offsets from __consumer_offsets; the commit then makes the offsets the
// group's, and a restart after an abort would have dropped them.
func TestTransactionSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	node := startNode(t, dir, txnNodeSets...)
	createTopic(t, node.addr, "restart", 1, nil)
	c := kafkatest.Dial(t, node.addr)
	const id, groupID = "t-restart", "restart-group"
	var pid int64
	var epoch int16
	testutil.Eventually(t, 15*time.Second, func() bool {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version = 4
		fc.CoordinatorType = 1
		fc.CoordinatorKeys = []string{id}
		if c.RoundTrip(fc).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode != 0 {
			return false
		}
		init := kmsg.NewPtrInitProducerIDRequest()
		init.Version = 4
		init.TransactionalID = kmsg.StringPtr(id)
		init.TransactionTimeoutMillis = 60000
		resp := c.RoundTrip(init).(*kmsg.InitProducerIDResponse)
		pid, epoch = resp.ProducerID, resp.ProducerEpoch
		return resp.ErrorCode == 0
	}, "InitProducerId")
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = id, pid, epoch, groupID
	if code := c.RoundTrip(ao).(*kmsg.AddOffsetsToTxnResponse).ErrorCode; code != 0 {
		t.Fatalf("AddOffsetsToTxn: %v", kerr.ErrorForCode(code))
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		oc := kmsg.NewPtrTxnOffsetCommitRequest()
		oc.Version = 3
		oc.TransactionalID, oc.Group, oc.ProducerID, oc.ProducerEpoch = id, groupID, pid, epoch
		oc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "restart", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7, LeaderEpoch: -1}}}}
		return c.RoundTrip(oc).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode == 0
	}, "TxnOffsetCommit accepted")

	node.stop(t)
	node = startNode(t, dir, txnNodeSets...)
	c = kafkatest.Dial(t, node.addr)
	fetch := func() (int64, int16) {
		of := kmsg.NewPtrOffsetFetchRequest()
		of.Version = 7
		of.Group = groupID
		of.RequireStable = true
		of.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "restart", Partitions: []int32{0}}}
		resp := c.RoundTrip(of).(*kmsg.OffsetFetchResponse)
		if resp.ErrorCode != 0 {
			return -1, resp.ErrorCode
		}
		rp := resp.Topics[0].Partitions[0]
		return rp.Offset, rp.ErrorCode
	}
	testutil.Eventually(t, 15*time.Second, func() bool {
		_, code := fetch()
		return code == kerr.UnstableOffsetCommit.Code
	}, "the reloaded offsets are pending")
	testutil.Eventually(t, 15*time.Second, func() bool {
		end := kmsg.NewPtrEndTxnRequest()
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, epoch, true
		return c.RoundTrip(end).(*kmsg.EndTxnResponse).ErrorCode == 0
	}, "EndTxn after the restart")
	testutil.Eventually(t, 10*time.Second, func() bool {
		off, code := fetch()
		return code == 0 && off == 7
	}, "the committed offset")
}
