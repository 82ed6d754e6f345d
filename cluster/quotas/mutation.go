package quotas

import (
	"time"

	"github.com/kbroker/kbroker/internal/quota"
)

// The controller mutation quota (KIP-599): controller_mutation_rate
// bounds the partitions a user/client-id creates or deletes per second —
// partitions created by CreateTopics, added by CreatePartitions, and of
// the topics removed by DeleteTopics; a validateOnly request spends
// nothing. It is measured, as in Kafka's ControllerMutationQuotaManager,
// by a token bucket (quota.TokenBucket) refilled at the quota up to a
// burst of quota × controller.quota.window.num ×
// controller.quota.window.size.seconds, next to a rate for the metrics.
//
// Each topic of a request asks the quota, after its own validation and
// before it is committed (as Kafka's ReplicationControlManager applies
// the quota per topic), in one of two ways chosen by the request
// version:
//
//   - strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+,
//     Kafka's StrictControllerMutationQuota): a topic asking while the
//     bucket is already below zero is refused with
//     THROTTLING_QUOTA_EXCEEDED and spends nothing; otherwise its
//     mutations are taken whole, so one topic may take the bucket below
//     zero and the next is refused. The throttle time is that of the
//     last refusal.
//   - permissive (older versions, whose clients do not know the error):
//     every topic is taken; once the bucket is below zero the request is
//     throttled.
//
// The throttle time is -tokens / quota, less the time since it was
// found; Respond puts the larger of it and the request-time throttle in
// throttle_time_ms and mutes the connection for it, as the other quotas
// do (request.go).
//
// Like the other client quotas it is enforced by the broker that
// receives the request. Kafka enforces it on the active controller,
// which all these requests reach; franz-go and the Java admin client
// send them to the controller kbroker names in Metadata, so for them the
// two agree.

// RecordMutations spends v mutations of the sensor that applies to user
// and clientID. It reports whether they were accepted and the throttle
// time (0 when within quota), with the sensor's tags. No quota applying
// accepts everything.
func (q *Manager) RecordMutations(user, clientID string, v float64, strict bool, now time.Time) (bool, time.Duration, Tags) {
	bound, tags, ok := Lookup(q.image(), Mutation, user, clientID)
	if !ok {
		return true, 0, tags
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sweepLocked(now)
	s := q.sensors[Mutation][tags]
	if s == nil {
		s = &sensor{rate: quota.NewRate(q.mutationCfg), bucket: quota.NewTokenBucket(q.mutationCfg)}
		q.sensors[Mutation][tags] = s
	}
	s.bound, s.lastUsed = bound, now
	// Strict: the check comes before the record, so a bucket with any
	// credit left takes the whole topic (Kafka's checkQuotas, then
	// record without a check). Permissive: record, then check.
	if strict && s.bucket.Exhausted(bound, now) {
		return false, s.bucket.Throttle(bound, now), tags
	}
	s.bucket.Record(v, bound, now)
	s.rate.Record(v, now)
	if strict {
		return true, 0, tags
	}
	return true, s.bucket.Throttle(bound, now), tags
}

// NoteThrottled counts a response throttled by a sensor, for the
// metrics.
func (q *Manager) NoteThrottled(kind Kind, tags Tags, t time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if s := q.sensors[kind][tags]; s != nil {
		s.throttled++
		s.throttle += t
	}
}

// tokens is what the metrics show of a sensor's bucket: its credits
// left, and whether it has one.
func (s *sensor) tokens(now time.Time) (float64, bool) {
	if s.bucket == nil {
		return 0, false
	}
	return s.bucket.Tokens(s.bound, now), true
}
