package replication

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The follower's side of an incremental fetch session (KIP-227), as
// Kafka's FetchSessionHandler: one per fetcher, so one per leader.
//
// The leader caches, per session, every partition the follower named and
// the fetch state it named it with (fetch offset, log start offset, leader
// epochs, max bytes), and reads all of them on every request, whether the
// request names them or not. So the follower's view of that cache must be
// exact:
//
//   - A full request (SessionEpoch 0) names every partition ready to
//     fetch; the answer's SessionID opens the session (0: the leader keeps
//     none, and the next request is full again).
//   - An incremental request names only the partitions that are new to the
//     session or whose fetch state changed (the log grew, was truncated or
//     restarted, a new leader epoch), and forgets the partitions no longer
//     ready (removed, truncating, backing off, throttled): a partition left
//     in the session is read by the leader at its cached fetch offset,
//     which counts as the follower's log end offset there, so it must be
//     the follower's real one.
//   - The answer carries any session partition with news (records, a moved
//     high watermark or log start offset, an error, a diverging epoch), not
//     only the named ones; the fetcher handles every one of them.
//   - A partition whose answer the fetcher could not use (an error, a
//     partition re-added meanwhile) is marked stale: named again in full
//     when it is next ready, forgotten otherwise, so nothing the leader
//     believes it told the follower is lost.
//   - Any session-level error (FETCH_SESSION_ID_NOT_FOUND,
//     INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR), a
//     failed request or a new connection starts over with a full request
//     that closes the old session ((id, 0), as Kafka's
//     nextCloseExistingAttemptNew).
//
// A fetchSession is used by its fetcher's goroutine only.

// sessionState is the fetch state of one partition as the leader caches
// it.
type sessionState struct {
	fp                                   *fetchPartition
	fetchOffset, logStartOffset          int64
	currentLeaderEpoch, lastFetchedEpoch int32
	maxBytes                             int32
	// stale: the leader may hold an answer the fetcher did not apply;
	// name the partition again (or forget it).
	stale bool
}

func (a sessionState) sameFetch(b sessionState) bool {
	return a.fp == b.fp && a.fetchOffset == b.fetchOffset && a.logStartOffset == b.logStartOffset &&
		a.currentLeaderEpoch == b.currentLeaderEpoch && a.lastFetchedEpoch == b.lastFetchedEpoch &&
		a.maxBytes == b.maxBytes
}

type fetchSession struct {
	// off: never open a session (SessionEpoch -1 on every request).
	off bool
	// id is the session's id (0: none); epoch the next request's epoch
	// (0: the next request is full, opening a session and closing id).
	id, epoch int32
	// parts is the leader's cache as the follower knows it; topicIDs the
	// ids of the topics in it (v12 names topics, and the ids are carried
	// for v13+ leaders).
	parts map[TopicPartition]sessionState
}

func newFetchSession(off bool) *fetchSession {
	return &fetchSession{off: off, parts: map[TopicPartition]sessionState{}}
}

// full reports whether the next request is a full one.
func (s *fetchSession) full() bool { return s.off || s.epoch == 0 }

// reset makes the next request a full one closing the current session.
func (s *fetchSession) reset() {
	s.epoch = 0
	clear(s.parts)
}

// markStale marks tp as holding an answer the fetcher did not apply.
func (s *fetchSession) markStale(tp TopicPartition) {
	if st, ok := s.parts[tp]; ok {
		st.stale = true
		s.parts[tp] = st
	}
}

// wantedPartition is a partition ready to fetch and its fetch state now.
type wantedPartition struct {
	tp      TopicPartition
	topicID [16]byte
	state   sessionState
}

// build sets req's session fields and topics from the partitions ready to
// fetch: all of them for a full request, the changed ones (and the
// forgotten topics) for an incremental one. It updates the session's view
// as the leader will have it once it accepts the request, and returns the
// number of partitions named.
func (s *fetchSession) build(req *kmsg.FetchRequest, wanted []wantedPartition) int {
	full := s.full()
	switch {
	case s.off:
		req.SessionID, req.SessionEpoch = 0, -1
	case full:
		req.SessionID, req.SessionEpoch = s.id, 0
	default:
		req.SessionID, req.SessionEpoch = s.id, s.epoch
	}
	topics := make(map[string]int)
	named := 0
	add := func(w wantedPartition) {
		i, ok := topics[w.tp.Topic]
		if !ok {
			i = len(req.Topics)
			topics[w.tp.Topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = w.tp.Topic, w.topicID
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = w.tp.Partition
		rp.CurrentLeaderEpoch = w.state.currentLeaderEpoch
		rp.FetchOffset = w.state.fetchOffset
		rp.LastFetchedEpoch = w.state.lastFetchedEpoch
		rp.LogStartOffset = w.state.logStartOffset
		rp.PartitionMaxBytes = w.state.maxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		named++
	}
	if full {
		clear(s.parts)
		for _, w := range wanted {
			add(w)
			s.parts[w.tp] = w.state
		}
		return named
	}
	keep := make(map[TopicPartition]bool, len(wanted))
	for _, w := range wanted {
		keep[w.tp] = true
		old, ok := s.parts[w.tp]
		if ok && !old.stale && old.sameFetch(w.state) {
			continue
		}
		add(w)
		s.parts[w.tp] = w.state
	}
	forgot := make(map[string]int)
	for tp := range s.parts {
		if keep[tp] {
			continue
		}
		delete(s.parts, tp)
		i, ok := forgot[tp.Topic]
		if !ok {
			i = len(req.ForgottenTopics)
			forgot[tp.Topic] = i
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic = tp.Topic
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
		}
		req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, tp.Partition)
	}
	return named
}

// handleResponse takes the session fields of the answer to a request
// built by build. It reports false when the answer is a session error:
// the session has been reset and the partitions' answers are not there.
func (s *fetchSession) handleResponse(resp *kmsg.FetchResponse, wasFull bool) (ok bool, reason string) {
	if s.off {
		return true, ""
	}
	switch resp.ErrorCode {
	case 0:
	case kerr.FetchSessionIDNotFound.Code, kerr.InvalidFetchSessionEpoch.Code, kerr.FetchSessionTopicIDError.Code:
		if resp.ErrorCode == kerr.FetchSessionIDNotFound.Code {
			s.id = 0 // nothing to close
		}
		s.reset()
		return false, kerr.ErrorForCode(resp.ErrorCode).Error()
	default:
		s.reset()
		return true, ""
	}
	if wasFull {
		s.id = resp.SessionID
		if s.id != 0 {
			s.epoch = 1
		}
		return true, ""
	}
	s.epoch = nextSessionEpoch(s.epoch)
	return true, ""
}

// nextSessionEpoch wraps to 1, never to the special epochs 0 and -1.
func nextSessionEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// fetchStats counts the fetchers' Fetch requests, so an operator can see
// the sessions at work: incremental requests naming few partitions.
type fetchStats struct {
	full, incremental                     atomic.Uint64
	fullPartitions, incrementalPartitions atomic.Uint64
	sessionResets                         atomic.Uint64
	side, sidePartitions                  atomic.Uint64
}

func (s *fetchStats) record(full bool, named int) {
	if full {
		s.full.Add(1)
		s.fullPartitions.Add(uint64(named))
		return
	}
	s.incremental.Add(1)
	s.incrementalPartitions.Add(uint64(named))
}

// FollowerFetchStats are this broker's replica fetchers' Fetch requests
// since it started: full ones (every partition ready named) and
// incremental ones (only the changed partitions named), the partitions
// they named, and the fetch sessions reset by a session error. Side
// requests are the sessionless fetches of partitions that became ready
// while their fetcher's session fetch waited at the leader (fetcher run),
// counted apart.
type FollowerFetchStats struct {
	FullRequests, IncrementalRequests     uint64
	FullPartitions, IncrementalPartitions uint64
	SessionResets                         uint64
	SideRequests, SidePartitions          uint64
}

// FollowerFetchStats reports the fetchers' requests (metrics, tests).
func (m *Manager) FollowerFetchStats() FollowerFetchStats {
	return FollowerFetchStats{
		FullRequests:          m.fetchStats.full.Load(),
		IncrementalRequests:   m.fetchStats.incremental.Load(),
		FullPartitions:        m.fetchStats.fullPartitions.Load(),
		IncrementalPartitions: m.fetchStats.incrementalPartitions.Load(),
		SessionResets:         m.fetchStats.sessionResets.Load(),
		SideRequests:          m.fetchStats.side.Load(),
		SidePartitions:        m.fetchStats.sidePartitions.Load(),
	}
}
