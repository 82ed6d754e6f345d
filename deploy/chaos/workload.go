package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Outcomes of a send.
const (
	outOK         = "ok"
	outFail       = "fail"       // definitely not written
	outIndefinite = "indefinite" // maybe written: timeout, unknown
)

// event is one line of the history file.
type event struct {
	Time      time.Time `json:"time"`
	Kind      string    `json:"kind"` // send, txn, fault-start, fault-end, note
	Producer  int       `json:"producer,omitempty"`
	Value     string    `json:"value,omitempty"`
	Outcome   string    `json:"outcome,omitempty"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Invoked   time.Time `json:"invoked,omitzero"`
	Fault     string    `json:"fault,omitempty"`
	Node      int32     `json:"node,omitempty"`
	Err       string    `json:"err,omitempty"`
	// A transaction (kind txn, txn_workload.go): its id, its records'
	// values and partitions, what the producer meant to do (commit or
	// abort), whether EndTransaction was asked to commit, and the outcome
	// (committed, aborted, unknown).
	Txn        string   `json:"txn,omitempty"`
	Values     []string `json:"values,omitempty"`
	Partitions []int32  `json:"partitions,omitempty"`
	Intent     string   `json:"intent,omitempty"`
	CommitSent bool     `json:"commit_sent,omitempty"`
}

// history is the JSONL file plus what the checker needs in memory.
type history struct {
	mu    sync.Mutex
	f     *os.File
	enc   *json.Encoder
	sends []event
	txns  []event
	werr  error // the first failed write or close
	shut  bool
}

func newHistory(path string) (*history, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &history{f: f, enc: json.NewEncoder(f)}, nil
}

func (h *history) add(e event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch e.Kind {
	case "send":
		h.sends = append(h.sends, e)
	case "txn":
		h.txns = append(h.txns, e)
	}
	if err := h.enc.Encode(e); err != nil && h.werr == nil {
		h.werr = err
	}
}

// close closes the file once; every call returns the first write or
// close error.
func (h *history) close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shut {
		return h.werr
	}
	h.shut = true
	if err := h.f.Close(); err != nil && h.werr == nil {
		h.werr = err
	}
	return h.werr
}

func (h *history) snapshot() []event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]event(nil), h.sends...)
}

func (h *history) txnSnapshot() []event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]event(nil), h.txns...)
}

// classify maps a send error to an outcome. Only errors that prove the
// record never reached a log are definite failures; everything else
// (timeouts, retries exhausted, closed client, lost connections) may have
// been written.
func classify(err error) string {
	if err == nil {
		return outOK
	}
	if errors.Is(err, kgo.ErrMaxBuffered) {
		return outFail
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && !ke.Retriable {
		switch ke {
		case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord, kerr.CorruptMessage,
			kerr.InvalidTopicException, kerr.TopicAuthorizationFailed, kerr.InvalidRequiredAcks:
			return outFail
		}
	}
	return outIndefinite
}

// producerOpts keep an idempotent acks=all producer going across leader
// changes with bounded waits.
func producerOpts(ep endpoint, topic string) []kgo.Opt {
	return ep.opts(
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.MetadataMinAge(200*time.Millisecond),
		kgo.MetadataMaxAge(5*time.Second),
		kgo.RetryTimeout(20*time.Second),
		kgo.ProduceRequestTimeout(8*time.Second),
		kgo.RecordDeliveryTimeout(30*time.Second),
		kgo.DialTimeout(2*time.Second),
		kgo.MaxBufferedRecords(5000),
	)
}

// producer hands over rate records per second until stop is closed, then
// flushes (bounded) and closes.
func runProducer(i int, ep endpoint, topic string, rate int, h *history, stop <-chan struct{}, acked func(time.Time)) error {
	cl, err := kgo.NewClient(producerOpts(ep, topic)...)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 500) // records in flight
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	const maxSeq = 10_000_000
loop:
	for seq := 0; seq < maxSeq; seq++ {
		select {
		case <-stop:
			break loop
		case <-tick.C:
		}
		select {
		case <-stop:
			break loop
		case sem <- struct{}{}:
		}
		v := fmt.Sprintf("p%d-%d", i, seq)
		invoked := time.Now()
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
			defer wg.Done()
			<-sem
			now := time.Now()
			e := event{Time: now, Kind: "send", Producer: i, Value: v, Outcome: classify(err),
				Partition: -1, Offset: -1, Invoked: invoked}
			if err == nil {
				e.Partition, e.Offset = r.Partition, r.Offset
				acked(now)
			} else {
				e.Err = err.Error()
			}
			h.add(e)
		})
	}
	fctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	ferr := cl.Flush(fctx)
	cancel()
	cl.Close() // fails whatever is still buffered
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("producer %d: callbacks still pending 30s after close", i)
	}
	if ferr != nil {
		return fmt.Errorf("producer %d flush: %w", i, ferr)
	}
	return nil
}

type po struct {
	p int32
	o int64
}

// reads collects every record any consumer read, and the anomalies seen
// while reading.
type reads struct {
	mu        sync.Mutex
	at        map[po]string // first value read at each offset
	conflicts []string      // one offset, two values
	order     []string      // a session's offsets not increasing
	count     int
}

func newReads() *reads {
	return &reads{at: map[po]string{}}
}

// caughtUp reports whether some consumer read each partition's last
// offset below its end offset in ends.
func (r *reads) caughtUp(ends map[int32]int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p, e := range ends {
		if _, ok := r.at[po{p, e - 1}]; e > 0 && !ok {
			return false
		}
	}
	return true
}

func (r *reads) add(who string, p int32, o int64, v string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	k := po{p, o}
	if old, ok := r.at[k]; ok {
		if old != v {
			r.conflicts = append(r.conflicts, fmt.Sprintf("p%d@%d read as %q and as %q (%s)", p, o, old, v, who))
		}
	} else {
		r.at[k] = v
	}
}

func (r *reads) disorder(s string) {
	r.mu.Lock()
	r.order = append(r.order, s)
	r.mu.Unlock()
}

// session tracks one consumer session's last offset per partition.
type session struct {
	name string
	last map[int32]int64
}

func (s *session) see(r *reads, p int32, o int64) {
	if l, ok := s.last[p]; ok && o <= l {
		r.disorder(fmt.Sprintf("%s: p%d offset %d after %d", s.name, p, o, l))
	}
	s.last[p] = o
}

// runAssignConsumer reads every partition by assignment in sessions of at
// most sessionLen, each new session resuming after the last offset read,
// until stop is closed.
func runAssignConsumer(ep endpoint, topic string, parts int, rd *reads, stop <-chan struct{}, sessionLen time.Duration, reReads *int) (int, error) {
	next := map[int32]int64{}
	for p := range parts {
		next[int32(p)] = 0
	}
	sessions := 0
	for ; sessions < 10000; sessions++ {
		select {
		case <-stop:
			return sessions, nil
		default:
		}
		offs := map[int32]kgo.Offset{}
		for p, o := range next {
			offs[p] = kgo.NewOffset().At(o)
		}
		cl, err := kgo.NewClient(ep.opts(
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
			kgo.MetadataMinAge(200*time.Millisecond), kgo.FetchMaxWait(500*time.Millisecond),
			kgo.DialTimeout(2*time.Second), kgo.RetryTimeout(10*time.Second))...)
		if err != nil {
			return sessions, err
		}
		s := &session{name: fmt.Sprintf("assign session %d", sessions+1), last: map[int32]int64{}}
		end := time.Now().Add(sessionLen)
		for polls := 0; polls < 100000 && time.Now().Before(end); polls++ {
			select {
			case <-stop:
				end = time.Time{}
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			fs := cl.PollFetches(ctx)
			cancel()
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset < offs[r.Partition].EpochOffset().Offset {
					// Below where this session asked to start: a
					// client or broker quirk, reported, not checked.
					*reReads++
				}
				s.see(rd, r.Partition, r.Offset)
				rd.add(s.name, r.Partition, r.Offset, string(r.Value))
				next[r.Partition] = r.Offset + 1
			})
		}
		cl.Close()
	}
	return sessions, nil
}

// groupSupport tries JoinGroup once: "" when the broker answers it like a
// group coordinator, otherwise why groups are unsupported.
func groupSupport(ep endpoint) string {
	cl, err := kgo.NewClient(ep.opts(kgo.RetryTimeout(5*time.Second), kgo.DialTimeout(2*time.Second))...)
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	group := fmt.Sprintf("chaos-probe-%d", time.Now().UnixNano())
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = group
	fc.CoordinatorKeys = []string{group}
	fcr, err := fc.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Sprintf("FindCoordinator: %v", err)
	}
	code := fcr.ErrorCode
	if len(fcr.Coordinators) > 0 {
		code = fcr.Coordinators[0].ErrorCode
	}
	if err := kerr.ErrorForCode(code); err != nil && !errors.Is(err, kerr.CoordinatorNotAvailable) {
		return fmt.Sprintf("FindCoordinator: %v", err)
	}
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group = group
	jg.SessionTimeoutMillis = 10000
	jg.RebalanceTimeoutMillis = 10000
	jg.ProtocolType = "consumer"
	pr := kmsg.NewJoinGroupRequestProtocol()
	pr.Name = "range"
	pr.Metadata = []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	jg.Protocols = append(jg.Protocols, pr)
	resp, err := jg.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Sprintf("JoinGroup: %v", err)
	}
	switch kerr.ErrorForCode(resp.ErrorCode) {
	case nil, kerr.MemberIDRequired, kerr.CoordinatorNotAvailable, kerr.NotCoordinator, kerr.CoordinatorLoadInProgress:
		return ""
	default:
		return fmt.Sprintf("JoinGroup: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

// groupStats is what the group consumer saw.
type groupStats struct {
	mu       sync.Mutex
	assigned int // assignments received
	records  int
	errs     map[string]int
}

// runGroupConsumer consumes topic in a group with autocommit until stop
// is closed; every assignment starts a new session.
func runGroupConsumer(ep endpoint, topic, group string, rd *reads, gs *groupStats, stop <-chan struct{}) error {
	var mu sync.Mutex
	s := &session{name: "group session 0", last: map[int32]int64{}}
	cl, err := kgo.NewClient(ep.opts(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AutoCommitInterval(time.Second), kgo.SessionTimeout(10*time.Second),
		kgo.MetadataMinAge(200*time.Millisecond), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.DialTimeout(2*time.Second),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			mu.Lock()
			gs.mu.Lock()
			gs.assigned++
			s = &session{name: fmt.Sprintf("group session %d", gs.assigned), last: map[int32]int64{}}
			gs.mu.Unlock()
			mu.Unlock()
		}))...)
	if err != nil {
		return err
	}
	for polls := 0; polls < 1_000_000; polls++ {
		select {
		case <-stop:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = cl.CommitUncommittedOffsets(ctx)
			cancel()
			closed := make(chan struct{})
			go func() { cl.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(20 * time.Second):
				return fmt.Errorf("group consumer did not close within 20s")
			}
			return nil
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(_ string, _ int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) {
				return
			}
			gs.mu.Lock()
			if gs.errs == nil {
				gs.errs = map[string]int{}
			}
			gs.errs[truncate(err.Error(), 80)]++
			gs.mu.Unlock()
		})
		mu.Lock()
		cur := s
		mu.Unlock()
		fs.EachRecord(func(r *kgo.Record) {
			cur.see(rd, r.Partition, r.Offset)
			rd.add(cur.name, r.Partition, r.Offset, string(r.Value))
			gs.mu.Lock()
			gs.records++
			gs.mu.Unlock()
		})
	}
	cl.Close()
	return nil
}

func (gs *groupStats) errSummary() string {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	type kv struct {
		k string
		n int
	}
	var all []kv
	for k, n := range gs.errs {
		all = append(all, kv{k, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
	s := ""
	for i, e := range all {
		if i == 3 {
			break
		}
		s += fmt.Sprintf("; %dx %s", e.n, e.k)
	}
	return s
}
