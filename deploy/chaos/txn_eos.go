package main

// The consume-transform-produce pipeline: one kgo.GroupTransactSession
// reads the transactional topic with read_committed in a consumer group
// and copies every record, value and partition unchanged, to an output
// topic, committing the group's offsets in the same transaction. The
// checker wants each record of the input exactly once in the output, in
// the input's order.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/clustercheck"
)

// eosStats is what the pipeline did.
type eosStats struct {
	mu        sync.Mutex
	committed int // transactions End reported committed
	aborted   int // transactions End aborted (rebalance, failed record, failed offset commit)
	failed    int // End or Begin errors (the session was replaced)
	records   int // records of committed transactions
	sessions  int
	errs      map[string]int
}

func (s *eosStats) errored(what string) {
	s.mu.Lock()
	if s.errs == nil {
		s.errs = map[string]int{}
	}
	s.errs[truncate(what, 80)]++
	s.mu.Unlock()
}

func eosOpts(ep endpoint, in, out, group, txnID string) []kgo.Opt {
	return ep.opts(
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(txnTimeout),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(10*time.Second),
		kgo.DefaultProduceTopic(out),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(200*time.Millisecond),
		kgo.MetadataMaxAge(5*time.Second),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.DialTimeout(2*time.Second),
		kgo.RetryTimeout(20*time.Second),
		kgo.ProduceRequestTimeout(8*time.Second),
		kgo.RecordDeliveryTimeout(20*time.Second),
	)
}

// closeWithin closes a session, giving up waiting after d.
func closeWithin(s *kgo.GroupTransactSession, d time.Duration) error {
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(d):
		return fmt.Errorf("eos session did not close within %v", d)
	}
}

// runEOS copies in to out in transactions until stop is closed. A failed
// Begin or End replaces the session: the new one's InitProducerId fences
// the old producer, and the group resumes from the committed offsets.
func runEOS(ep endpoint, in, out, group, txnID string, st *eosStats, stop <-chan struct{}) error {
	var sess *kgo.GroupTransactSession
	defer func() {
		if sess != nil {
			_ = closeWithin(sess, 20*time.Second)
		}
	}()
	for loops := 0; loops < 1_000_000; loops++ {
		select {
		case <-stop:
			return nil
		default:
		}
		if sess == nil {
			var err error
			if sess, err = kgo.NewGroupTransactSession(eosOpts(ep, in, out, group, txnID)...); err != nil {
				return fmt.Errorf("eos session: %w", err)
			}
			st.mu.Lock()
			st.sessions++
			st.mu.Unlock()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := sess.PollFetches(ctx)
		cancel()
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				st.errored("fetch: " + err.Error())
			}
		})
		n := fs.NumRecords()
		if n == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			st.errored("begin: " + err.Error())
			st.mu.Lock()
			st.failed++
			st.mu.Unlock()
			_ = closeWithin(sess, 20*time.Second)
			sess = nil
			continue
		}
		first := kgo.AbortingFirstErrPromise(sess.Client())
		pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(pctx, &kgo.Record{Partition: r.Partition, Value: r.Value}, first.Promise())
		})
		commit := kgo.TransactionEndTry(first.Err() == nil)
		pcancel()
		ectx, ecancel := context.WithTimeout(context.Background(), 60*time.Second)
		committed, err := sess.End(ectx, commit)
		ecancel()
		st.mu.Lock()
		switch {
		case err != nil:
			st.failed++
		case committed:
			st.committed++
			st.records += n
		default:
			st.aborted++
		}
		st.mu.Unlock()
		if err != nil {
			st.errored("end: " + err.Error())
			_ = closeWithin(sess, 20*time.Second)
			sess = nil
		}
	}
	return nil
}

// eosCaughtUp waits until the group's committed offsets of every
// partition of in reach ends (up to d).
func eosCaughtUp(ctx context.Context, ep endpoint, group, in string, ends map[int32]int64, d time.Duration) error {
	cl, err := kgo.NewClient(ep.opts(kgo.DialTimeout(2*time.Second), kgo.RetryTimeout(5*time.Second))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var behind string
	deadline := time.Now().Add(d)
	for polls := 0; polls < 10_000; polls++ {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		offs, err := adm.FetchOffsets(fctx, group)
		cancel()
		if err == nil {
			behind = ""
			for p, e := range ends {
				o, ok := offs.Lookup(in, p)
				if !ok || o.Err != nil || o.At < e {
					at := int64(-1)
					if ok {
						at = o.At
					}
					behind += fmt.Sprintf(" p%d at %d of %d", p, at, e)
				}
			}
			if behind == "" {
				return nil
			}
		} else {
			behind = " " + err.Error()
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("the eos group %s did not commit to the end of %s within %v:%s", group, in, d, behind)
}

// checkEOS compares the pipeline's input (the final read_committed read
// of the transactional topic, plus its end sentinels) with its output
// (the final read_committed read of the output topic): every input record
// exactly once, in the same partition and order.
func (r *txnReport) checkEOS(in map[int32][]clustercheck.Record, sentinels map[int32]string, out map[int32][]clustercheck.Record, st *eosStats) {
	r.eos = true
	st.mu.Lock()
	r.eosCommitted, r.eosAborted, r.eosFailed, r.eosSessions = st.committed, st.aborted, st.failed, st.sessions
	for k, n := range st.errs {
		r.notes = append(r.notes, fmt.Sprintf("transactions: eos pipeline: %dx %s", n, k))
	}
	st.mu.Unlock()
	parts := map[int32]bool{}
	for p := range in {
		parts[p] = true
	}
	for p := range out {
		parts[p] = true
	}
	for p := range sentinels {
		parts[p] = true
	}
	for p := range parts {
		var want []string
		for _, rec := range in[p] {
			want = append(want, rec.Value)
		}
		if s, ok := sentinels[p]; ok {
			want = append(want, s)
		}
		r.eosIn += len(want)
		r.eosOut += len(out[p])
		count := map[string]int{}
		for _, v := range want {
			count[v]++
		}
		for _, rec := range out[p] {
			count[rec.Value]--
			switch c := count[rec.Value]; {
			case c == -1 && !contains(want, rec.Value):
				r.eosStray++
				r.example("transactions: eos output %q at p%d@%d is no input record of p%d", rec.Value, p, rec.Offset, p)
			case c < 0:
				r.eosDup++
				r.example("transactions: eos output %q more than once in p%d (again at %d)", rec.Value, p, rec.Offset)
			}
		}
		same := len(want) == len(out[p])
		for v, c := range count {
			if c > 0 {
				same = false
				r.eosLost += c
				r.example("transactions: eos input %q of p%d is not in the output", v, p)
			}
		}
		if same {
			for i, rec := range out[p] {
				if rec.Value != want[i] {
					r.eosReordered++
					r.example("transactions: eos output of p%d out of order: %q at position %d, input has %q there", p, rec.Value, i, want[i])
					break
				}
			}
		}
	}
}
