package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/storage"
)

// Backoffs of the fetchers: after a connection error (then redial), and
// for a partition the leader refused (NOT_LEADER_OR_FOLLOWER, an epoch
// mismatch: the image will move it on).
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = time.Second
	// minPartitionBackoff is the first backoff of a partition the leader
	// refused. Short: right after a leader change the new leader often
	// has not applied the image yet (NOT_LEADER_OR_FOLLOWER,
	// UNKNOWN_LEADER_EPOCH) and will a few milliseconds later, while
	// acks=all produces wait for this follower to fetch.
	minPartitionBackoff = 20 * time.Millisecond
	// replicaFetchResponseMaxBytes is replica.fetch.response.max.bytes.
	replicaFetchResponseMaxBytes = 10 << 20
)

// fetcher replicates every partition this broker follows from one leader,
// in one goroutine owned by Run (Kafka's ReplicaFetcherThread, with one
// fetcher per source broker).
type fetcher struct {
	m      *Manager
	leader int32
	logger *slog.Logger
	cancel context.CancelFunc
	wake   chan struct{} // capacity 1: a partition was added
	// session is the incremental fetch session with the leader
	// (fetch_session.go); used by run's goroutine only.
	session *fetchSession

	mu struct {
		sync.Mutex
		parts map[TopicPartition]*fetchPartition
	}
}

// fetchPartition is one partition of a fetcher.
type fetchPartition struct {
	p     *Partition
	epoch int32 // leader epoch it follows under
	// truncate is set until the log has been truncated to the point
	// where it agrees with the leader's (OffsetForLeaderEpoch).
	truncate   bool
	delayUntil time.Time
	backoff    time.Duration
	// caughtUp: the last fetch brought the log to the leader's high
	// watermark, so a follower throttle does not hold it back (Kafka
	// spares a replica in sync).
	caughtUp bool
}

// throttleBackoff is how long a fetcher whose every partition is held
// back by the follower throttle waits before looking again.
const throttleBackoff = 100 * time.Millisecond

func newFetcher(m *Manager, leader int32) *fetcher {
	f := &fetcher{m: m, leader: leader, wake: make(chan struct{}, 1),
		logger:  m.cfg.Logger.With("fetcher", leader),
		session: newFetchSession(m.cfg.NoFetchSessions)}
	f.mu.parts = make(map[TopicPartition]*fetchPartition)
	return f
}

// reconcileFetchersLocked moves every follower partition to the fetcher
// of its leader (re-adding it, truncation first, on a new leader epoch),
// removes leader and deleted partitions from the fetchers and stops idle
// fetchers. It does nothing while Run is not running.
func (m *Manager) reconcileFetchersLocked() {
	ctx := m.running()
	if ctx == nil {
		return
	}
	for tp, a := range m.mu.assigned {
		p, ok := m.mu.partitions[tp]
		if ok {
			st := p.State()
			if st.Leader == a.leader && st.LeaderEpoch == a.epoch {
				continue
			}
		}
		m.mu.fetchers[a.leader].remove(tp)
		delete(m.mu.assigned, tp)
	}
	for tp, p := range m.mu.partitions {
		st := p.State()
		if st.Leader == m.cfg.NodeID || st.Leader < 0 {
			continue
		}
		if _, ok := m.mu.assigned[tp]; ok {
			continue
		}
		f, ok := m.mu.fetchers[st.Leader]
		if !ok {
			f = newFetcher(m, st.Leader)
			fctx, cancel := context.WithCancel(ctx)
			f.cancel = cancel
			if !m.spawn(func(context.Context) { f.run(fctx) }) {
				cancel()
				return
			}
			m.mu.fetchers[st.Leader] = f
		}
		f.add(tp, p, st.LeaderEpoch)
		m.mu.assigned[tp] = assignment{leader: st.Leader, epoch: st.LeaderEpoch}
	}
	for id, f := range m.mu.fetchers {
		if f.size() == 0 {
			f.cancel()
			delete(m.mu.fetchers, id)
		}
	}
}

func (f *fetcher) add(tp TopicPartition, p *Partition, epoch int32) {
	f.mu.Lock()
	f.mu.parts[tp] = &fetchPartition{p: p, epoch: epoch, truncate: !f.m.skipEpochRequest}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) remove(tp TopicPartition) {
	if f == nil {
		return
	}
	f.mu.Lock()
	delete(f.mu.parts, tp)
	f.mu.Unlock()
}

func (f *fetcher) size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.mu.parts)
}

// fetchCall is one Fetch request in flight, on a goroutine of its own
// (fetcher.start); its answer comes back to the fetcher's goroutine,
// which alone handles answers.
type fetchCall struct {
	conn LeaderConn
	sent []sentPartition
	// full: built as a full request of the fetch session (handleResponse).
	full bool
	// side: a side fetch (run), without a session.
	side bool
	// deadline is when the leader answers at the latest (MaxWaitMillis).
	deadline time.Time
}

type fetchResult struct {
	call *fetchCall
	resp *kmsg.FetchResponse
	err  error
}

// maxSideFetches bounds a fetcher's side fetches in flight (run), and so
// its connections to the leader beyond the first.
const maxSideFetches = 4

// inFlight is a fetcher's calls in flight (run's alone) and the
// partitions they hold, which no other request may name meanwhile.
type inFlight struct {
	calls map[*fetchCall]bool
	busy  map[TopicPartition]bool
}

func (f *inFlight) add(c *fetchCall) {
	f.calls[c] = true
	for _, s := range c.sent {
		f.busy[s.tp] = true
	}
}

func (f *inFlight) done(c *fetchCall) {
	delete(f.calls, c)
	for _, s := range c.sent {
		delete(f.busy, s.tp)
	}
}

// start sends req on conn from a goroutine of its own, tracked by wg; the
// answer goes to results, unless ctx ends first.
func (f *fetcher) start(ctx context.Context, wg *sync.WaitGroup, results chan<- fetchResult, conn LeaderConn, req *kmsg.FetchRequest, sent []sentPartition, full, side bool) *fetchCall {
	c := &fetchCall{conn: conn, sent: sent, full: full, side: side,
		deadline: time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)}
	wg.Go(func() {
		resp, err := conn.Fetch(ctx, req)
		select {
		case results <- fetchResult{c, resp, err}:
		case <-ctx.Done():
		}
	})
	return c
}

// sideMargin is how long before the deadline of the session fetch in
// flight a side fetch ends (run): a partition left then waits for the
// session fetch's answer, and joins the next session request.
func (f *fetcher) sideMargin() time.Duration {
	return min(10*time.Millisecond, f.m.cfg.ReplicaFetchWaitMax/10)
}

// run is the fetcher loop: dial, truncate the partitions that need it,
// fetch, append, repeat; back off and redial on connection errors.
//
// The session fetch (main) names the partitions through the fetch
// session and waits at the leader up to replica.fetch.wait.max.ms when
// there is no data. A partition that becomes ready while it waits (added
// by a new image, as a new topic's partitions are; back from a backoff or
// a truncation) does not wait for its answer, which would hold a new
// partition's first acks=all produce for up to replica.fetch.wait.max.ms
// (issue 14; Kafka's fetcher also takes new partitions at once): a side
// fetch, without a session and on another connection (the leader answers
// a connection's requests in order), fetches the ready partitions that no
// fetch in flight holds, waiting at the leader until at most sideMargin
// before the session fetch's deadline. Up to maxSideFetches are in flight,
// so partitions added while one waits do not wait for it either. A
// partition is in at most one request at a time: every change to it comes
// from the answer of the one request that holds it, as when there was one
// request. Side partitions join the session's next request once their
// side fetch has answered; until then, they are fetched on the side again
// whenever the session fetch is in flight.
func (f *fetcher) run(ctx context.Context) {
	var conn LeaderConn
	var wg sync.WaitGroup
	results := make(chan fetchResult)
	inflight := inFlight{calls: map[*fetchCall]bool{}, busy: map[TopicPartition]bool{}}
	var main *fetchCall                  // the session fetch in flight
	var spare []LeaderConn               // side connections not in use
	sides := 0                           // side fetches in flight
	sideSession := newFetchSession(true) // sessionless full requests
	defer func() {
		if conn != nil {
			conn.Close()
		}
		for c := range inflight.calls {
			if c.side {
				c.conn.Close()
			}
		}
		for _, c := range spare {
			c.Close()
		}
		wg.Wait() // the calls in flight end with ctx
	}()
	backoff := minBackoff
	failures := 0 // consecutive
	fail := func(what string, err error) {
		failures++
		refused := errors.Is(err, syscall.ECONNREFUSED)
		if refused || failures == 1 {
			// A broken connection or a refused dial (the dial is lazy,
			// so a refusal shows on the first request): the leader may
			// be gone. Said at once, before clients decide where to
			// send next.
			f.m.hooks.leaderUnreachable(f.leader, refused)
		}
		if ctx.Err() == nil {
			f.logger.Info("replica fetcher: "+what, "err", err, "retry_in", backoff)
		}
		if conn != nil {
			conn.Close()
			conn = nil
		}
		// A session fetch in flight is abandoned: its answer is
		// dropped, and its partitions stay out of other requests until
		// it comes (closing the connection ends it).
		main = nil
		// Whether the leader took the last request is unknown: start
		// over with a full one (closing the session if it still has it).
		f.session.reset()
		if failures == 1 && !errors.Is(err, syscall.ECONNREFUSED) {
			// Redial at once after a working connection broke: when the
			// leader was killed the redial is refused, which reports it
			// (above) within milliseconds of the kill rather than after
			// a backoff, while clients are still deciding where to send.
			return
		}
		sleep(ctx, backoff)
		backoff = min(2*backoff, maxBackoff)
	}
	for ctx.Err() == nil {
		if conn == nil {
			c, err := f.dial(ctx)
			if err != nil {
				fail("dial", err)
				continue
			}
			conn = c
		}
		// OffsetForLeaderEpoch does not wait behind a fetch in flight
		// (the kgo client sends it on another connection).
		if err := f.truncatePhase(ctx, conn, inflight.busy); err != nil {
			fail("offset for leader epoch", err)
			continue
		}
		now := time.Now()
		throttled := false
		switch {
		case main == nil:
			full := f.session.full()
			req, sent, th := f.buildFetch(now, inflight.busy, f.session)
			throttled = th
			if len(sent) > 0 {
				main = f.start(ctx, &wg, results, conn, req, sent, full, false)
				inflight.add(main)
			}
		case sides < maxSideFetches && time.Until(main.deadline) > 2*f.sideMargin():
			req, sent, th := f.buildFetch(now, inflight.busy, sideSession)
			throttled = th
			if len(sent) == 0 {
				break
			}
			var sc LeaderConn
			if n := len(spare); n > 0 {
				sc, spare = spare[n-1], spare[:n-1]
			} else {
				c, err := f.dial(ctx)
				if err != nil {
					f.logger.Info("replica fetcher: side dial", "err", err)
					for _, s := range sent {
						f.delay(s, now)
					}
					break
				}
				sc = c
			}
			req.MaxWaitMillis = int32(min(f.m.cfg.ReplicaFetchWaitMax, time.Until(main.deadline)-f.sideMargin()) / time.Millisecond)
			f.m.fetchStats.side.Add(1)
			inflight.add(f.start(ctx, &wg, results, sc, req, sent, true, true))
			sides++
			continue // more partitions may be ready for another
		}
		wait := f.nextDelay(now, inflight.busy)
		if throttled {
			wait = min(wait, throttleBackoff)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-f.wake:
		case <-t.C:
		case r := <-results:
			inflight.done(r.call)
			switch {
			case r.call.side:
				sides--
				f.handleSide(ctx, r, sideSession, &spare)
			case r.call == main:
				main = nil
				if r.err != nil {
					fail("fetch", r.err)
					break
				}
				if failures > 0 {
					f.m.hooks.leaderReachable(f.leader)
				}
				backoff, failures = minBackoff, 0
				if ok, reason := f.session.handleResponse(r.resp, r.call.full); !ok {
					// The leader lost the session (it restarted, evicted
					// it) or saw a request twice: nothing in this answer
					// is about the partitions. The next request is full.
					f.m.fetchStats.sessionResets.Add(1)
					f.logger.Info("replica fetcher: fetch session reset, next fetch is full", "reason", reason)
					break
				}
				if r.call.full && r.resp.SessionID != 0 {
					f.logger.Debug("replica fetcher: fetch session opened", "session_id", r.resp.SessionID, "partitions", len(r.call.sent))
				}
				f.handleFetch(r.call.sent, r.resp, f.session)
			default:
				// A session fetch abandoned by fail.
			}
		}
		t.Stop()
	}
}

// handleSide applies a side fetch's answer; its connection goes back to
// spare, or is closed after an error, whose partitions are fetched again
// after their backoff, on a new connection (the session fetch sees to
// the leader's health).
func (f *fetcher) handleSide(ctx context.Context, r fetchResult, session *fetchSession, spare *[]LeaderConn) {
	if r.err != nil {
		if ctx.Err() == nil {
			f.logger.Info("replica fetcher: side fetch", "err", r.err)
		}
		r.call.conn.Close()
		now := time.Now()
		for _, s := range r.call.sent {
			f.delay(s, now)
		}
		return
	}
	*spare = append(*spare, r.call.conn)
	f.handleFetch(r.call.sent, r.resp, session)
}

func (f *fetcher) dial(ctx context.Context) (LeaderConn, error) {
	f.m.mu.RLock()
	img := f.m.mu.image
	f.m.mu.RUnlock()
	if img == nil {
		return nil, errors.New("no metadata image")
	}
	ep, ok := img.BrokerEndpoint(f.leader, f.m.cfg.InterBrokerListener)
	if !ok {
		return nil, fmt.Errorf("broker %d has no endpoint on listener %q", f.leader, f.m.cfg.InterBrokerListener)
	}
	return f.m.cfg.Dialer.Dial(ctx, f.leader, ep)
}

// nextDelay is how long until the backoff of a partition not in a
// request in flight (busy) ends, at most maxBackoff.
func (f *fetcher) nextDelay(now time.Time, busy map[TopicPartition]bool) time.Duration {
	wait := maxBackoff
	f.mu.Lock()
	for tp, fp := range f.mu.parts {
		if busy[tp] {
			continue
		}
		if d := fp.delayUntil.Sub(now); d > 0 && d < wait {
			wait = max(d, time.Millisecond)
		}
	}
	f.mu.Unlock()
	return wait
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// sentPartition is a partition as it was when a request was built.
type sentPartition struct {
	tp    TopicPartition
	fp    *fetchPartition
	epoch int32
}

// current reports whether s still describes the partition's state in the
// fetcher (it was not removed or re-added meanwhile).
func (f *fetcher) current(s sentPartition) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.parts[s.tp] == s.fp && s.fp.epoch == s.epoch
}

// delay backs a partition off after the leader refused it.
func (f *fetcher) delay(s sentPartition, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.parts[s.tp] != s.fp {
		return
	}
	s.fp.backoff = min(max(2*s.fp.backoff, minPartitionBackoff), maxBackoff)
	s.fp.delayUntil = now.Add(s.fp.backoff)
}

func (f *fetcher) ready(s sentPartition, truncate bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.parts[s.tp] != s.fp {
		return
	}
	s.fp.truncate = truncate
	s.fp.backoff = 0
}

func (f *fetcher) setCaughtUp(s sentPartition, caughtUp bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.parts[s.tp] == s.fp {
		s.fp.caughtUp = caughtUp
	}
}

// truncatePhase asks the leader OffsetForLeaderEpoch for the latest local
// epoch of every partition that needs it and truncates to the answer
// (KIP-101/279); a partition whose answer names an epoch the follower
// does not have is truncated to its own end of the epoch before and asked
// again, until the two agree. Partitions in a fetch in flight (busy:
// re-added under a new epoch meanwhile) wait for its answer.
func (f *fetcher) truncatePhase(ctx context.Context, conn LeaderConn, busy map[TopicPartition]bool) error {
	for {
		now := time.Now()
		var todo []sentPartition
		f.mu.Lock()
		for tp, fp := range f.mu.parts {
			if fp.truncate && !now.Before(fp.delayUntil) && !busy[tp] {
				todo = append(todo, sentPartition{tp: tp, fp: fp, epoch: fp.epoch})
			}
		}
		f.mu.Unlock()
		if len(todo) == 0 {
			return nil
		}
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version = 4
		req.ReplicaID = f.m.cfg.NodeID
		topics := make(map[string]int)
		asked := make(map[TopicPartition]sentPartition)
		for _, s := range todo {
			latest, ok := s.fp.p.log.LatestEpoch()
			if !ok {
				// No epochs: nothing to compare; keep what is committed.
				if _, err := s.fp.p.followerTruncate(f.leader, s.epoch, s.fp.p.HighWatermark()); err != nil {
					f.logger.Error("truncating to the high watermark", "partition", s.tp, "err", err)
					f.delay(s, now)
					continue
				}
				f.ready(s, false)
				continue
			}
			i, ok := topics[s.tp.Topic]
			if !ok {
				i = len(req.Topics)
				topics[s.tp.Topic] = i
				t := kmsg.NewOffsetForLeaderEpochRequestTopic()
				t.Topic = s.tp.Topic
				req.Topics = append(req.Topics, t)
			}
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition = s.tp.Partition
			rp.CurrentLeaderEpoch = s.epoch
			rp.LeaderEpoch = latest
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
			asked[s.tp] = s
		}
		if len(asked) == 0 {
			continue
		}
		resp, err := conn.OffsetForLeaderEpoch(ctx, req)
		if err != nil {
			return err
		}
		again := false
		for _, t := range resp.Topics {
			for _, rp := range t.Partitions {
				tp := TopicPartition{Topic: t.Topic, Partition: rp.Partition}
				s, ok := asked[tp]
				if !ok || !f.current(s) {
					continue
				}
				delete(asked, tp)
				if rp.ErrorCode != 0 {
					f.logger.Info("offset for leader epoch refused", "partition", tp, "err", kerr.ErrorForCode(rp.ErrorCode))
					f.delay(s, now)
					continue
				}
				off, done := s.fp.p.truncationFor(rp.LeaderEpoch, rp.EndOffset)
				if _, err := s.fp.p.followerTruncate(f.leader, s.epoch, off); err != nil {
					f.logger.Error("truncating", "partition", tp, "offset", off, "err", err)
					f.delay(s, now)
					continue
				}
				f.ready(s, !done)
				again = again || !done
			}
		}
		for _, s := range asked { // not answered
			f.delay(s, now)
		}
		if !again {
			return nil
		}
	}
}

// buildFetch builds a Fetch v12 through session: it names every
// partition ready to fetch, and not in a fetch in flight (busy), in a full
// request, the changed ones in an incremental request (fetch_session.go).
// sent is every partition the leader will read, named or not, and so may
// answer. It also reports whether the follower throttle held any back.
func (f *fetcher) buildFetch(now time.Time, busy map[TopicPartition]bool, session *fetchSession) (*kmsg.FetchRequest, []sentPartition, bool) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = f.m.cfg.NodeID
	req.MaxWaitMillis = int32(f.m.cfg.ReplicaFetchWaitMax / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = max(replicaFetchResponseMaxBytes, f.m.cfg.ReplicaFetchMaxBytes)
	req.IsolationLevel = 0
	var sent []sentPartition
	var wanted []wantedPartition
	throttled := false
	exceeded := sync.OnceValue(func() bool { return f.m.followerThrottle.exceeded(now) })
	f.mu.Lock()
	for tp, fp := range f.mu.parts {
		if fp.truncate || now.Before(fp.delayUntil) || busy[tp] {
			continue
		}
		if fp.p.followerThrottled.Load() && !fp.caughtUp && exceeded() {
			throttled = true
			continue
		}
		leo, start, latest := fp.p.followerPosition()
		wanted = append(wanted, wantedPartition{tp: tp, topicID: fp.p.TopicID, state: sessionState{
			fp:                 fp,
			fetchOffset:        leo,
			logStartOffset:     start,
			currentLeaderEpoch: fp.epoch,
			lastFetchedEpoch:   latest,
			maxBytes:           f.m.cfg.ReplicaFetchMaxBytes,
		}})
		sent = append(sent, sentPartition{tp: tp, fp: fp, epoch: fp.epoch})
	}
	f.mu.Unlock()
	if len(sent) == 0 {
		return req, nil, throttled
	}
	if session != f.session {
		// A side fetch (run).
		f.m.fetchStats.sidePartitions.Add(uint64(len(wanted)))
		session.build(req, wanted)
		return req, sent, throttled
	}
	full := session.full()
	named := session.build(req, wanted)
	f.m.fetchStats.record(full, named)
	return req, sent, throttled
}

// handleFetch applies a fetch response to a request built through
// session.
func (f *fetcher) handleFetch(sent []sentPartition, resp *kmsg.FetchResponse, session *fetchSession) {
	bySent := make(map[TopicPartition]sentPartition, len(sent))
	for _, s := range sent {
		bySent[s.tp] = s
	}
	now := time.Now()
	if resp.ErrorCode != 0 {
		// The session was reset (handleResponse).
		f.logger.Info("fetch refused", "err", kerr.ErrorForCode(resp.ErrorCode))
		for _, s := range sent {
			f.delay(s, now)
		}
		return
	}
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			tp := TopicPartition{Topic: t.Topic, Partition: rp.Partition}
			s, ok := bySent[tp]
			if !ok || !f.current(s) {
				// The leader thinks it told us: name the partition
				// again when it is next fetched.
				session.markStale(tp)
				continue
			}
			if !f.handlePartition(s, rp, now) {
				session.markStale(tp)
			}
		}
	}
}

// handlePartition applies one partition's answer. It reports whether the
// answer was applied as a fetch at the position sent (false: an error, a
// truncation or a restart; the fetch session names the partition afresh).
func (f *fetcher) handlePartition(s sentPartition, rp *kmsg.FetchResponseTopicPartition, now time.Time) bool {
	p := s.fp.p
	log := f.logger.With("topic", s.tp.Topic, "partition", s.tp.Partition)
	switch rp.ErrorCode {
	case 0:
	case kerr.OffsetOutOfRange.Code:
		leo, _, _ := p.followerPosition()
		if rp.LogStartOffset > leo {
			log.Info("follower behind the leader's log start offset: restarting the log", "log_end_offset", leo, "leader_log_start_offset", rp.LogStartOffset)
			if _, err := p.followerRestartAt(f.leader, s.epoch, rp.LogStartOffset); err != nil {
				log.Error("restarting the log", "err", err)
				f.delay(s, now)
			}
			return false
		}
		f.ready(s, true) // ask OffsetForLeaderEpoch where to truncate
		return false
	default:
		// NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
		// UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION and the rest:
		// wait for the image to move the partition on.
		log.Debug("fetch refused", "err", kerr.ErrorForCode(rp.ErrorCode))
		f.delay(s, now)
		return false
	}
	if d := rp.DivergingEpoch; d.Epoch >= 0 || d.EndOffset >= 0 {
		off, done := p.truncationFor(d.Epoch, d.EndOffset)
		log.Info("log diverges from the leader's: truncating", "diverging_epoch", d.Epoch, "diverging_end_offset", d.EndOffset, "offset", off)
		if _, err := p.followerTruncate(f.leader, s.epoch, off); err != nil {
			log.Error("truncating", "offset", off, "err", err)
			f.delay(s, now)
			return false
		}
		f.ready(s, !done)
		return false
	}
	if p.followerThrottled.Load() {
		f.m.followerThrottle.record(len(rp.RecordBatches), now)
	}
	if len(rp.RecordBatches) > 0 {
		if _, err := p.followerAppend(f.leader, s.epoch, rp.RecordBatches); err != nil {
			log.Error("appending fetched batches", "err", err)
			if errors.Is(err, storage.ErrInvalidRecord) {
				// Not where the leader thinks we are: find out again.
				f.ready(s, true)
				return false
			}
			f.delay(s, now)
			return false
		}
		if p.durable() {
			// Fsync what this response brought (one fsync for all its
			// batches) before the next fetch reports the new log end
			// offset to the leader; see durable.go.
			if err := p.log.SyncTo(p.LogEndOffset()); err != nil {
				log.Error("fsyncing fetched batches", "err", err)
				f.delay(s, now)
				return false
			}
		}
	}
	f.ready(s, false)
	f.setCaughtUp(s, p.LogEndOffset() >= rp.HighWatermark)
	if p.followerHighWatermark(f.leader, s.epoch, rp.HighWatermark) {
		f.m.hooks.highWatermark(s.tp)
	}
	if err := p.followerLogStart(f.leader, s.epoch, rp.LogStartOffset); err != nil {
		log.Error("raising the log start offset", "leader_log_start_offset", rp.LogStartOffset, "err", err)
	}
	return true
}
