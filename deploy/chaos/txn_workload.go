package main

// The transactional workload: transactional producers writing a few
// records per transaction to several partitions of their own topic,
// committing most transactions and aborting some on purpose; a
// read_committed consumer reading the topic while the faults run; a
// sampler comparing each partition's last stable offset with its high
// watermark; and the final read_committed read the checker
// (txn_checker.go) compares with the logged transactions.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/clustercheck"
)

// Outcomes of a transaction, as EndTransaction reported them.
const (
	txnCommitted = "committed" // EndTransaction(TryCommit) returned nil
	txnAborted   = "aborted"   // EndTransaction(TryAbort) returned nil, or a commit was not attempted
	txnUnknown   = "unknown"   // the EndTransaction call failed
	txnNotBegun  = "not-begun" // BeginTransaction failed: nothing was produced
)

const (
	// txnAbortOneIn: one transaction in this many is aborted on purpose.
	txnAbortOneIn = 5
	// txnTimeout is the producers' transaction.timeout.ms: a transaction
	// whose producer went away is aborted by its coordinator after it
	// (plus the coordinator's abort interval, 10 s by default), which
	// bounds how long it holds the last stable offset back.
	txnTimeout = 10 * time.Second
	// txnPause is the pause between two transactions of one producer.
	txnPause = 100 * time.Millisecond
	// sentinelPrefix marks the non-transactional records the final read
	// writes to find the end of each partition (readCommitted).
	sentinelPrefix = "end-"
)

// txnValue is the value of record j of transaction txn: the transaction
// id is the value up to its last dash.
func txnValue(txn string, j int) string { return fmt.Sprintf("%s-%d", txn, j) }

func txnOfValue(v string) string {
	if i := strings.LastIndexByte(v, '-'); i > 0 {
		return v[:i]
	}
	return v
}

func txnProducerOpts(ep endpoint, topic, txnID string) []kgo.Opt {
	return ep.opts(
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(txnTimeout),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MetadataMinAge(200*time.Millisecond),
		kgo.MetadataMaxAge(5*time.Second),
		kgo.RetryTimeout(20*time.Second),
		kgo.ProduceRequestTimeout(8*time.Second),
		kgo.RecordDeliveryTimeout(20*time.Second),
		kgo.DialTimeout(2*time.Second),
	)
}

// runTxnProducer runs transactions with the transactional id txnID until
// stop is closed, logging each one to h. Each transaction writes 2 to 4
// records to consecutive partitions from a random one, and is committed,
// or aborted one time in txnAbortOneIn, or aborted because a record
// failed. After a failed EndTransaction the client is replaced: the new
// one's InitProducerId bumps the epoch, and the coordinator finishes what
// the old one left (completes a prepared commit, aborts the rest).
func runTxnProducer(i int, txnID string, ep endpoint, topic string, parts int, seed int64, h *history, stop <-chan struct{}) error {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)+0x74786e))
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	const maxTxns = 1_000_000
	for n := 0; n < maxTxns; n++ {
		select {
		case <-stop:
			return nil
		case <-time.After(txnPause):
		}
		if cl == nil {
			var err error
			if cl, err = kgo.NewClient(txnProducerOpts(ep, topic, txnID)...); err != nil {
				return fmt.Errorf("txn producer %d: %w", i, err)
			}
		}
		e := event{Time: time.Now(), Kind: "txn", Producer: i, Txn: fmt.Sprintf("t%d-%d", i, n),
			Intent: "commit", Partition: -1, Offset: -1}
		if rng.IntN(txnAbortOneIn) == 0 {
			e.Intent = "abort"
		}
		k := 2 + rng.IntN(3)
		first := rng.IntN(parts)
		for j := range k {
			e.Values = append(e.Values, txnValue(e.Txn, j))
			e.Partitions = append(e.Partitions, int32((first+j)%parts))
		}
		e.Invoked = e.Time
		reset := runTxn(cl, &e)
		e.Time = time.Now()
		h.add(e)
		if reset {
			// Close does not commit: what the coordinator does with an
			// unfinished transaction is up to it and the next epoch.
			cl.Close()
			cl = nil
		}
	}
	return nil
}

// runTxn runs one transaction on cl as e describes it and fills in its
// outcome; it reports whether the client must be replaced.
func runTxn(cl *kgo.Client, e *event) (reset bool) {
	bg := context.Background()
	if err := cl.BeginTransaction(); err != nil {
		e.Outcome, e.Err, e.Values, e.Partitions = txnNotBegun, "begin: "+err.Error(), nil, nil
		return true
	}
	pctx, pcancel := context.WithTimeout(bg, 30*time.Second)
	defer pcancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var produceErr error
	for j, v := range e.Values {
		wg.Add(1)
		cl.Produce(pctx, &kgo.Record{Partition: e.Partitions[j], Value: []byte(v)}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if produceErr == nil {
					produceErr = fmt.Errorf("produce %s: %w", v, err)
				}
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(pctx); err != nil {
		// Records still buffered must not join the next transaction.
		actx, acancel := context.WithTimeout(bg, 10*time.Second)
		_ = cl.AbortBufferedRecords(actx)
		acancel()
		mu.Lock()
		if produceErr == nil {
			produceErr = fmt.Errorf("flush: %w", err)
		}
		mu.Unlock()
	}
	if !waitGroup(&wg, 30*time.Second) {
		// No EndTxn was sent: the transaction can only abort, by its
		// timeout or the next client's InitProducerId.
		e.Outcome, e.Err = txnUnknown, "records still pending 30s after the flush"
		return true
	}
	// EndTransaction's context is not cancelled early on purpose: a
	// cancelled EndTxn leaves the outcome unknown. The client's own retry
	// timeout bounds it.
	ectx, ecancel := context.WithTimeout(bg, 60*time.Second)
	defer ecancel()
	if e.Intent == "commit" && produceErr == nil {
		e.CommitSent = true
		err := cl.EndTransaction(ectx, kgo.TryCommit)
		switch {
		case err == nil:
			e.Outcome = txnCommitted
			return false
		case errors.Is(err, kerr.OperationNotAttempted):
			// franz-go did not send EndTxn(commit): the producer id
			// had failed. The transaction can only abort.
			e.CommitSent = false
			e.Err = "commit not attempted: " + err.Error()
		default:
			e.Outcome, e.Err = txnUnknown, "commit: "+err.Error()
			return true
		}
	} else if produceErr != nil {
		e.Err = produceErr.Error()
	}
	if err := cl.EndTransaction(ectx, kgo.TryAbort); err != nil {
		e.Outcome = txnUnknown
		e.Err = strings.TrimPrefix(e.Err+"; abort: "+err.Error(), "; ")
		return true
	}
	e.Outcome = txnAborted
	return false
}

// txnReads is what the read_committed consumer read while the faults
// ran, and the last stable offsets its fetch responses carried.
type txnReads struct {
	mu      sync.Mutex
	at      map[po]string   // value read at each offset
	where   map[string][]po // offsets each value was read at
	count   int             // records read
	fetches int             // partition fetch responses checked
	lsoBad  []string        // fetch responses with LSO > HW
	errs    map[string]int  // fetch errors by message
	last    map[int32]int64 // last offset read per partition
	order   []string        // offsets not increasing, or read with two values
}

func newTxnReads() *txnReads {
	return &txnReads{at: map[po]string{}, where: map[string][]po{}, errs: map[string]int{}, last: map[int32]int64{}}
}

func (r *txnReads) add(p int32, o int64, v string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	if l, ok := r.last[p]; ok && o <= l {
		r.order = append(r.order, fmt.Sprintf("p%d offset %d after %d", p, o, l))
	}
	r.last[p] = o
	k := po{p, o}
	if old, ok := r.at[k]; ok {
		if old != v {
			r.order = append(r.order, fmt.Sprintf("p%d@%d read as %q and as %q", p, o, old, v))
		}
		return
	}
	r.at[k] = v
	r.where[v] = append(r.where[v], k)
}

// fetched checks one partition of a fetch response: its last stable
// offset is never past its high watermark (both from the same response).
func (r *txnReads) fetched(p kgo.FetchPartition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.Err != nil {
		if !errors.Is(p.Err, context.DeadlineExceeded) && !errors.Is(p.Err, context.Canceled) {
			r.errs[truncate(p.Err.Error(), 80)]++
		}
		return
	}
	r.fetches++
	if p.HighWatermark >= 0 && p.LastStableOffset > p.HighWatermark {
		r.lsoBad = append(r.lsoBad, fmt.Sprintf("fetch response for p%d at %s: last stable offset %d > high watermark %d",
			p.Partition, time.Now().Format("15:04:05.000"), p.LastStableOffset, p.HighWatermark))
	}
}

// runTxnConsumer reads every partition of topic with read_committed from
// offset 0 until stop is closed.
func runTxnConsumer(ep endpoint, topic string, parts int, tr *txnReads, stop <-chan struct{}) error {
	offs := map[int32]kgo.Offset{}
	for p := range parts {
		offs[int32(p)] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(ep.opts(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.MetadataMinAge(200*time.Millisecond), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.DialTimeout(2*time.Second), kgo.RetryTimeout(10*time.Second))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for polls := 0; polls < 1_000_000; polls++ {
		select {
		case <-stop:
			return nil
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			tr.fetched(p.FetchPartition)
			for _, r := range p.Records {
				tr.add(r.Partition, r.Offset, string(r.Value))
			}
		})
	}
	return nil
}

// lsoStats is what the LSO/HW sampler saw.
type lsoStats struct {
	mu      sync.Mutex
	rounds  int
	samples int // partitions with both offsets from one leader epoch
	errs    map[string]int
	bad     []string
}

func (s *lsoStats) errored(what string) {
	s.mu.Lock()
	if s.errs == nil {
		s.errs = map[string]int{}
	}
	s.errs[truncate(what, 80)]++
	s.mu.Unlock()
}

// runLSOSampler asks the leader of every partition of topic, every
// interval until stop is closed, for its latest offset with
// read_committed (the last stable offset) and then with read_uncommitted
// (the high watermark), both requests carrying the leader epoch from
// metadata so that both answers come from one leader in one epoch. In an
// epoch the leader's high watermark only grows, so the LSO asked first
// being above the HW asked second is a violation.
func runLSOSampler(ep endpoint, topic string, interval time.Duration, st *lsoStats, stop <-chan struct{}) error {
	cl, err := kgo.NewClient(ep.opts(kgo.DialTimeout(2*time.Second), kgo.RetryTimeout(5*time.Second),
		kgo.MetadataMinAge(200*time.Millisecond))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for rounds := 0; rounds < 1_000_000; rounds++ {
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		sampleLSO(ctx, cl, topic, st)
		cancel()
	}
	return nil
}

func sampleLSO(ctx context.Context, cl *kgo.Client, topic string, st *lsoStats) {
	st.mu.Lock()
	st.rounds++
	st.mu.Unlock()
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	m, err := mreq.RequestWith(ctx, cl)
	if err != nil {
		st.errored("metadata: " + err.Error())
		return
	}
	// Partitions by leader, with the epoch metadata gave.
	byLeader := map[int32]map[int32]int32{}
	for p, ps := range clustercheck.PartStates(m, topic) {
		if ps.Leader < 0 || ps.ErrorCode != 0 {
			continue
		}
		if byLeader[ps.Leader] == nil {
			byLeader[ps.Leader] = map[int32]int32{}
		}
		byLeader[ps.Leader][p] = ps.Epoch
	}
	for leader, epochs := range byLeader {
		lso := listLatest(ctx, cl, leader, topic, epochs, 1, st)
		if lso == nil {
			continue
		}
		hw := listLatest(ctx, cl, leader, topic, epochs, 0, st)
		for p, l := range lso {
			h, ok := hw[p]
			if !ok {
				continue
			}
			st.mu.Lock()
			st.samples++
			if l > h {
				st.bad = append(st.bad, fmt.Sprintf("p%d at %s: leader %d epoch %d answered last stable offset %d, then high watermark %d",
					p, time.Now().Format("15:04:05.000"), leader, epochs[p], l, h))
			}
			st.mu.Unlock()
		}
	}
}

// listLatest sends one ListOffsets (latest, isolation level iso) for the
// partitions in epochs to broker leader and returns the offsets of those
// that answered without error.
func listLatest(ctx context.Context, cl *kgo.Client, leader int32, topic string, epochs map[int32]int32, iso int8, st *lsoStats) map[int32]int64 {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = iso
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p, ep := range epochs {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = p, ep, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
	if err != nil {
		st.errored(fmt.Sprintf("ListOffsets to %d: %v", leader, err))
		return nil
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				st.errored("ListOffsets: " + err.Error())
				continue
			}
			out[p.Partition] = p.Offset
		}
	}
	return out
}

// readCommitted reads every partition of topic with read_committed from
// offset 0 to its end. The end is found by writing one
// non-transactional record (sentinelPrefix) to each partition first:
// a read_committed consumer returns it only once every transaction
// before it was decided, so reading up to it reads everything written
// before. The sentinels are returned apart, by partition.
func readCommitted(ctx context.Context, ep endpoint, topic string, parts int) (map[int32][]clustercheck.Record, map[int32]string, error) {
	pcl, err := kgo.NewClient(ep.opts(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DialTimeout(2*time.Second), kgo.RecordDeliveryTimeout(30*time.Second))...)
	if err != nil {
		return nil, nil, err
	}
	var recs []*kgo.Record
	for p := range parts {
		recs = append(recs, &kgo.Record{Partition: int32(p), Value: []byte(fmt.Sprintf("%s%s-%d", sentinelPrefix, topic, p))})
	}
	res := pcl.ProduceSync(ctx, recs...)
	pcl.Close()
	if err := res.FirstErr(); err != nil {
		return nil, nil, fmt.Errorf("writing the end sentinels: %w", err)
	}
	sentinel := map[int32]int64{}
	values := map[int32]string{}
	for _, r := range res {
		sentinel[r.Record.Partition] = r.Record.Offset
		values[r.Record.Partition] = string(r.Record.Value)
	}
	offs := map[int32]kgo.Offset{}
	for p := range parts {
		offs[int32(p)] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(ep.opts(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DialTimeout(2*time.Second))...)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	got := map[int32][]clustercheck.Record{}
	remaining := len(sentinel)
	var fetchErrs []string
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(_ string, p int32, err error) {
			if len(fetchErrs) < 5 {
				fetchErrs = append(fetchErrs, fmt.Sprintf("p%d: %v", p, err))
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			s, ok := sentinel[r.Partition]
			switch {
			case !ok || r.Offset > s:
			case r.Offset == s:
				delete(sentinel, r.Partition)
				remaining--
			default:
				got[r.Partition] = append(got[r.Partition], clustercheck.Record{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
			}
		})
	}
	if remaining > 0 {
		return got, values, fmt.Errorf("read_committed read of %s: %d partitions short of their end sentinels %v (fetch errors: %s): %w",
			topic, remaining, sentinel, strings.Join(fetchErrs, "; "), ctx.Err())
	}
	return got, values, nil
}
