package fetchsession

// Incremental fetch sessions (KIP-227), as Kafka's FetchSessionCache.
//
// A fetcher with many partitions (a follower, a consumer of a large
// topic) would otherwise send every partition in every request and get
// every partition back, mostly empty. With a session the broker remembers
// the partitions and their fetch state, the fetcher sends only what
// changed (new fetch offsets, added and forgotten partitions) and the
// broker answers only partitions with something new: records, a moved
// high watermark, last stable offset or log start offset, or an error.
//
// The request's (SessionID, SessionEpoch) says what it is:
//
//	(0, -1)   full, no session                  answered in full, session id 0
//	(0, 0)    full, open a session              answered in full with the new id
//	(id, 0)   close id, open a new one          as (0, 0)
//	(id, -1)  close id, full, no session        as (0, -1)
//	(id, n)   incremental on id at epoch n      only what changed
//
// An incremental request naming an unknown session (or one opened by
// another principal) gets FETCH_SESSION_ID_NOT_FOUND, one at the wrong
// epoch INVALID_FETCH_SESSION_EPOCH, one switching between topic names
// (v12-) and topic ids (v13+) FETCH_SESSION_TOPIC_ID_ERROR; the fetcher
// then starts over with a full request, so a lost session costs one
// round trip, never data.
//
// Every partition of the session is read on every request, named or not:
// a follower's omitted partitions count as fetched at their cached fetch
// offset, so its log end offset and catch-up time (and with them the high
// watermark and the ISR) move for all of them. A partition the fetcher
// names again is always in the next answer (followers), and a fetcher must find
// every partition it named in the session, or it would never be read
// again: a request whose partitions do not all fit is answered without a
// session (full) or drops it (incremental, FETCH_SESSION_ID_NOT_FOUND).
//
// Bounds: at most max.incremental.fetch.session.cache.slots sessions
// (Kafka's key, default 1000; 0 turns sessions off) and at most
// fetchSessionMaxPartitions partitions across them. A consumer's
// partitions of topics the metadata image does not know are not kept, so
// a consumer session holds at most the cluster's partitions, whatever the
// requests claim; a follower's are (see addLocked). When the cache
// is full a new session replaces one idle for fetchSessionEvictAfter
// (Kafka's two minutes), else a follower's session replaces the least
// recently used consumer session, else the fetch is answered without a
// session (legal: the fetcher keeps sending full requests).
//
// Partitions that returned records move to the end of their session's
// order, so that under MaxBytes the others get their turn next time.

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/metadata"
)

const (
	// fetchSessionEvictAfter is how long a session must be idle before
	// a new one may replace it (Kafka's
	// MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS).
	fetchSessionEvictAfter = 2 * time.Minute
	// fetchSessionMaxPartitions bounds the partitions cached across all
	// sessions (about 150 bytes each).
	fetchSessionMaxPartitions = 1_000_000
)

// KIP-227's special session id and epochs.
const (
	sessionIDNone      int32 = 0
	sessionEpochOpen   int32 = 0  // full request opening a session
	sessionEpochClosed int32 = -1 // full request without a session
)

// sessionKey names a partition in a session: by topic name (v12 and
// older) or by topic id (v13+), never both.
type sessionKey struct {
	topic     string
	topicID   [16]byte
	partition int32
}

// cachedPartition is what a session remembers of one partition: the
// fetcher's last request fields, and the values last sent to it, which
// decide whether the partition must be in the next incremental response.
type cachedPartition struct {
	key                sessionKey
	fetchOffset        int64
	logStartOffset     int64 // the fetcher's (followers)
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32

	// Last sent; -1 (or any value the partition cannot have) forces the
	// next response to carry the partition.
	highWatermark    int64
	lastStableOffset int64
	leaderLogStart   int64
}

func newCachedPartition(key sessionKey, p *kmsg.FetchRequestTopicPartition) *cachedPartition {
	c := &cachedPartition{key: key, highWatermark: -1, lastStableOffset: -1, leaderLogStart: -1}
	c.updateRequest(p)
	return c
}

// forgetSent makes the next response carry the partition.
func (c *cachedPartition) forgetSent() {
	c.highWatermark, c.lastStableOffset, c.leaderLogStart = -1, -1, -1
}

func (c *cachedPartition) updateRequest(p *kmsg.FetchRequestTopicPartition) {
	c.fetchOffset = p.FetchOffset
	c.logStartOffset = p.LogStartOffset
	c.maxBytes = p.PartitionMaxBytes
	c.currentLeaderEpoch = p.CurrentLeaderEpoch
	c.lastFetchedEpoch = p.LastFetchedEpoch
}

// mustRespond reports whether rp carries news for the fetcher, and
// records what was sent when it does.
func (c *cachedPartition) mustRespond(rp *kmsg.FetchResponseTopicPartition) bool {
	if rp.ErrorCode != 0 {
		// Forget the last values so that the first answer after
		// the error carries them all again.
		c.forgetSent()
		return true
	}
	must := len(rp.RecordBatches) > 0 || rp.DivergingEpoch.Epoch >= 0 || rp.DivergingEpoch.EndOffset >= 0 || rp.PreferredReadReplica >= 0
	if rp.HighWatermark != c.highWatermark || rp.LastStableOffset != c.lastStableOffset || rp.LogStartOffset != c.leaderLogStart {
		must = true
		c.highWatermark, c.lastStableOffset, c.leaderLogStart = rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset
	}
	return must
}

// fetchSession is one fetcher's session.
type fetchSession struct {
	id           int32
	principal    string
	privileged   bool // a follower's
	usesTopicIDs bool
	epoch        int32 // the epoch the next incremental request must carry
	lastUsed     time.Time
	parts        map[sessionKey]*cachedPartition
	order        []*cachedPartition // request and response order
}

// Cache holds the sessions of one broker.
type Cache struct {
	slots int

	mu         sync.Mutex
	sessions   map[int32]*fetchSession
	partitions int // cached across sessions
	evictions  int64
}

func NewCache(slots int) *Cache {
	return &Cache{slots: slots, sessions: map[int32]*fetchSession{}}
}

// Context is how one Fetch request uses the cache: read is the
// request to read (for an incremental fetch, the session's partitions
// with the request's changes), and finish turns the full response to
// read into the response to send.
type Context struct {
	cache *Cache
	Read  *kmsg.FetchRequest
	// ErrorCode answers the request at once with no partitions.
	ErrorCode int16
	// session is the incremental fetch's session; nil otherwise.
	session *fetchSession
	// open tells a full fetch to open a session when it is answered.
	open       bool
	principal  string
	privileged bool
}

// Begin decides how req uses the cache. It applies an incremental
// request's changes to its session and advances the session's epoch at
// once, as Kafka does, so a duplicate of the request is refused.
func (c *Cache) Begin(req *kmsg.FetchRequest, img *metadata.Image, principal string, privileged bool, now time.Time) *Context {
	fc := &Context{cache: c, Read: req, principal: principal, privileged: privileged}
	if c == nil || req.Version < 7 {
		return fc
	}
	full := req.SessionEpoch == sessionEpochOpen || req.SessionEpoch == sessionEpochClosed
	c.mu.Lock()
	defer c.mu.Unlock()
	if full {
		if req.SessionID != sessionIDNone {
			if s := c.sessions[req.SessionID]; s != nil && s.principal == principal {
				c.removeLocked(s)
			}
		}
		fc.open = req.SessionEpoch == sessionEpochOpen && c.slots > 0
		return fc
	}
	s := c.sessions[req.SessionID]
	switch {
	case s == nil || s.principal != principal:
		fc.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return fc
	case s.epoch != req.SessionEpoch:
		fc.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
		return fc
	case s.usesTopicIDs != (req.Version >= 13):
		fc.ErrorCode = kerr.FetchSessionTopicIDError.Code
		return fc
	}
	s.epoch = nextSessionEpoch(s.epoch)
	s.lastUsed = now
	if !c.updateLocked(s, req, img) {
		// A partition the fetcher believes cached would never be read
		// again: drop the session, the fetcher starts over (and gets
		// none while the cache is full).
		c.removeLocked(s)
		fc.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return fc
	}
	fc.session = s
	fc.Read = s.requestLocked(req)
	return fc
}

// nextSessionEpoch wraps to 1, never to the special epochs.
func nextSessionEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// updateLocked applies an incremental request: forgotten partitions
// leave, named ones are added or take the request's fetch state. It
// reports false when a named partition could not be cached
// (fetchSessionMaxPartitions).
func (c *Cache) updateLocked(s *fetchSession, req *kmsg.FetchRequest, img *metadata.Image) bool {
	forgot := false
	for _, t := range req.ForgottenTopics {
		for _, p := range t.Partitions {
			k := sessionKey{topic: t.Topic, topicID: t.TopicID, partition: p}
			if req.Version >= 13 {
				k.topic = ""
			} else {
				k.topicID = [16]byte{}
			}
			if _, ok := s.parts[k]; ok {
				delete(s.parts, k)
				c.partitions--
				forgot = true
			}
		}
	}
	if forgot {
		s.order = slices.DeleteFunc(s.order, func(p *cachedPartition) bool { return s.parts[p.key] != p })
	}
	return c.addLocked(s, req, img, true)
}

// addLocked adds or updates the request's partitions, within
// fetchSessionMaxPartitions, and reports false when one did not fit.
//
// A follower's partition named by an incremental request (named) is
// answered by the next response whatever changed: kbroker's fetchers name
// a partition again when they could not use the last answer (re-added on
// a new leader epoch, retried after an error), so nothing the session
// believes it told the follower may be skipped. Consumers get Kafka's
// rule (only what changed).
//
// A consumer's partition the image does not know is answered from the
// request (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID) and never
// cached, so a session holds at most the cluster's partitions whatever
// consumers claim; filter caches it if it turns out known by the time
// it is read. A follower's is cached: brokers' images differ for a while
// after a topic is created, and a follower whose partition the leader
// did not cache would never have it read again while it leaves it out of
// its incremental requests.
func (c *Cache) addLocked(s *fetchSession, req *kmsg.FetchRequest, img *metadata.Image, named bool) bool {
	fits := true
	for i := range req.Topics {
		t := &req.Topics[i]
		for j := range t.Partitions {
			p := &t.Partitions[j]
			k, known := sessionKeyOf(img, req.Version, t, p.Partition)
			if cp := s.parts[k]; cp != nil {
				cp.updateRequest(p)
				if named && s.privileged {
					cp.forgetSent()
				}
				continue
			}
			if !known && !s.privileged {
				// Answered this time from the request (requestLocked
				// keeps it), not cached.
				continue
			}
			if c.partitions >= fetchSessionMaxPartitions {
				fits = false
				continue
			}
			c.addPartitionLocked(s, newCachedPartition(k, p))
		}
	}
	return fits
}

func (c *Cache) addPartitionLocked(s *fetchSession, cp *cachedPartition) {
	s.parts[cp.key] = cp
	s.order = append(s.order, cp)
	c.partitions++
}

// sessionKeyOf is the key of a requested partition and whether the
// image has that partition.
func sessionKeyOf(img *metadata.Image, version int16, t *kmsg.FetchRequestTopic, partition int32) (sessionKey, bool) {
	var mt *metadata.Topic
	k := sessionKey{partition: partition}
	if version >= 13 {
		k.topicID = t.TopicID
		mt = img.TopicsByID[t.TopicID]
	} else {
		k.topic = t.Topic
		mt = img.Topics[t.Topic]
	}
	return k, mt != nil && partition >= 0 && int(partition) < len(mt.Partitions)
}

// requestLocked is the full request an incremental fetch reads: every
// session partition in the session's order, then the request's
// partitions that are not cached.
func (s *fetchSession) requestLocked(req *kmsg.FetchRequest) *kmsg.FetchRequest {
	full := *req
	full.Topics = nil
	full.ForgottenTopics = nil
	add := func(topic string, id [16]byte, p kmsg.FetchRequestTopicPartition) {
		if n := len(full.Topics); n > 0 && full.Topics[n-1].Topic == topic && full.Topics[n-1].TopicID == id {
			full.Topics[n-1].Partitions = append(full.Topics[n-1].Partitions, p)
			return
		}
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = topic, id
		t.Partitions = append(t.Partitions, p)
		full.Topics = append(full.Topics, t)
	}
	for _, cp := range s.order {
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = cp.key.partition
		p.FetchOffset = cp.fetchOffset
		p.LogStartOffset = cp.logStartOffset
		p.PartitionMaxBytes = cp.maxBytes
		p.CurrentLeaderEpoch = cp.currentLeaderEpoch
		p.LastFetchedEpoch = cp.lastFetchedEpoch
		add(cp.key.topic, cp.key.topicID, p)
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			k := sessionKey{topic: t.Topic, topicID: t.TopicID, partition: p.Partition}
			if req.Version >= 13 {
				k.topic = ""
			} else {
				k.topicID = [16]byte{}
			}
			if s.parts[k] == nil {
				add(t.Topic, t.TopicID, p)
			}
		}
	}
	return &full
}

// Finish turns resp, the answer to fc.read, into the answer to send: for
// an incremental fetch only the partitions with news, for a full fetch
// that opens a session all of them under the new session's id.
func (fc *Context) Finish(resp *kmsg.FetchResponse, img *metadata.Image, now time.Time) *kmsg.FetchResponse {
	switch {
	case fc.ErrorCode != 0:
		r := fc.Read.ResponseKind().(*kmsg.FetchResponse)
		r.ErrorCode = fc.ErrorCode
		return r
	case fc.session != nil:
		fc.cache.filter(fc.session, fc.Read, resp)
	case fc.open:
		resp.SessionID = fc.cache.open(fc, img, resp, now)
	}
	return resp
}

// filter drops from resp the session partitions without news, and moves
// those that returned records to the end of the session's order.
func (c *Cache) filter(s *fetchSession, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp.SessionID = s.id
	var sent []*cachedPartition
	topics := resp.Topics[:0]
	for ti := range resp.Topics {
		t := resp.Topics[ti]
		parts := t.Partitions[:0]
		for _, rp := range t.Partitions {
			k := sessionKey{partition: rp.Partition}
			if req.Version >= 13 {
				k.topicID = t.TopicID
			} else {
				k.topic = t.Topic
			}
			cp := s.parts[k]
			if cp == nil {
				// Not cached (a consumer's partition of a topic
				// the image did not know): always answered. Read
				// without an error, the topic is known now: cache
				// it, or the fetcher, which believes it cached,
				// would never have it read again.
				parts = append(parts, rp)
				if rp.ErrorCode == 0 && c.sessions[s.id] == s && c.partitions < fetchSessionMaxPartitions {
					if p := requestPartition(req, t.Topic, t.TopicID, rp.Partition); p != nil {
						cp = newCachedPartition(k, p)
						cp.mustRespond(&rp)
						c.addPartitionLocked(s, cp)
					}
				}
				continue
			}
			if !cp.mustRespond(&rp) {
				continue
			}
			parts = append(parts, rp)
			if len(rp.RecordBatches) > 0 {
				sent = append(sent, cp)
			}
		}
		if len(parts) > 0 {
			t.Partitions = parts
			topics = append(topics, t)
		}
	}
	resp.Topics = topics
	if len(sent) > 0 && c.sessions[s.id] == s {
		moved := make(map[*cachedPartition]bool, len(sent))
		for _, cp := range sent {
			moved[cp] = true
		}
		s.order = slices.DeleteFunc(s.order, func(cp *cachedPartition) bool { return moved[cp] })
		s.order = append(s.order, sent...)
	}
}

// requestPartition is the partition of req named by topic (v12-) or
// topic id (v13+) and partition, or nil.
func requestPartition(req *kmsg.FetchRequest, topic string, id [16]byte, partition int32) *kmsg.FetchRequestTopicPartition {
	for i := range req.Topics {
		t := &req.Topics[i]
		if (req.Version >= 13 && t.TopicID != id) || (req.Version < 13 && t.Topic != topic) {
			continue
		}
		for j := range t.Partitions {
			if t.Partitions[j].Partition == partition {
				return &t.Partitions[j]
			}
		}
	}
	return nil
}

// open creates a session holding the full request's known partitions
// with the values resp sent, and returns its id, or 0 when the cache has
// no room.
func (c *Cache) open(fc *Context, img *metadata.Image, resp *kmsg.FetchResponse, now time.Time) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) >= c.slots && !c.evictLocked(fc.privileged, now) {
		return sessionIDNone
	}
	s := &fetchSession{
		principal: fc.principal, privileged: fc.privileged,
		usesTopicIDs: fc.Read.Version >= 13,
		epoch:        1, lastUsed: now,
		parts: map[sessionKey]*cachedPartition{},
	}
	if !c.addLocked(s, fc.Read, img, false) {
		// A session missing a partition the fetcher named would
		// never read it again: answer without a session.
		c.partitions -= len(s.parts)
		return sessionIDNone
	}
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			k := sessionKey{partition: rp.Partition}
			if s.usesTopicIDs {
				k.topicID = t.TopicID
			} else {
				k.topic = t.Topic
			}
			if cp := s.parts[k]; cp != nil {
				cp.mustRespond(rp)
			}
		}
	}
	for {
		s.id = rand.Int32N(1<<31-1) + 1
		if c.sessions[s.id] == nil {
			break
		}
	}
	c.sessions[s.id] = s
	return s.id
}

// evictLocked makes room for a new session: the least recently used
// session idle for fetchSessionEvictAfter, else, for a follower, the
// least recently used consumer session.
func (c *Cache) evictLocked(privileged bool, now time.Time) bool {
	var lru, lruConsumer *fetchSession
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) {
			lru = s
		}
		if !s.privileged && (lruConsumer == nil || s.lastUsed.Before(lruConsumer.lastUsed)) {
			lruConsumer = s
		}
	}
	victim := lru
	if victim == nil || now.Sub(victim.lastUsed) < fetchSessionEvictAfter {
		victim = nil
		if privileged {
			victim = lruConsumer
		}
	}
	if victim == nil {
		return false
	}
	c.removeLocked(victim)
	c.evictions++
	return true
}

func (c *Cache) removeLocked(s *fetchSession) {
	delete(c.sessions, s.id)
	c.partitions -= len(s.parts)
}

// Stats reports the sessions, their cached partitions and the evictions
// so far, for the metrics.
func (c *Cache) Stats() (sessions, partitions int, evictions int64) {
	if c == nil {
		return 0, 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions), c.partitions, c.evictions
}
