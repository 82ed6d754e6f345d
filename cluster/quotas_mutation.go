package cluster

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

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

// mutationQuota is the controller mutation quota of one request (Kafka's
// ControllerMutationQuota). A nil *mutationQuota is no quota: every
// mutation is accepted.
type mutationQuota struct {
	rc     *RequestContext
	strict bool
}

// mutationQuota returns the request's controller mutation quota, strict
// from version strictSince, or nil when none applies to the request's
// user and client id.
func (rc *RequestContext) mutationQuota(strictSince int16) *mutationQuota {
	q := rc.conn.srv.quotas
	if q == nil || rc.exempt {
		return nil
	}
	if _, _, ok := lookupQuota(q.image(), quotaMutation, rc.quotaUser(), rc.quotaClientID()); !ok {
		return nil
	}
	return &mutationQuota{rc: rc, strict: rc.Header.APIVersion >= strictSince}
}

// record asks the quota for the partitions a topic creates or deletes.
// The error (strict quotas only) is THROTTLING_QUOTA_EXCEEDED: the topic
// must not be committed.
func (m *mutationQuota) record(partitions int) error {
	if m == nil || partitions <= 0 {
		return nil
	}
	rc := m.rc
	now := time.Now()
	ok, t, tags := rc.conn.srv.quotas.recordMutations(rc.quotaUser(), rc.quotaClientID(), float64(partitions), m.strict, now)
	if t > 0 {
		rc.mutationThrottle = mutationThrottle{t: t, at: now, tags: tags}
	}
	if !ok {
		return fmt.Errorf("%w: controller_mutation_rate exhausted; retry after %v", kerr.ThrottlingQuotaExceeded, t)
	}
	return nil
}

// mutationThrottle is the last throttle time a request's mutation quota
// found (Kafka's lastThrottleTimeMs and lastRecordedTimeMs) and the
// sensor it came from.
type mutationThrottle struct {
	t    time.Duration
	at   time.Time
	tags quotaTags
}

// left is what remains of the throttle at now.
func (m mutationThrottle) left(now time.Time) time.Duration {
	if m.t <= 0 {
		return 0
	}
	return max(0, m.t-now.Sub(m.at))
}

// recordMutations spends v mutations of the sensor that applies to user
// and clientID. It reports whether they were accepted and the throttle
// time (0 when within quota), with the sensor's tags. No quota applying
// accepts everything.
func (q *clientQuotas) recordMutations(user, clientID string, v float64, strict bool, now time.Time) (bool, time.Duration, quotaTags) {
	bound, tags, ok := lookupQuota(q.image(), quotaMutation, user, clientID)
	if !ok {
		return true, 0, tags
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sweepLocked(now)
	s := q.sensors[quotaMutation][tags]
	if s == nil {
		s = &quotaSensor{rate: quota.NewRate(q.mutationCfg), bucket: quota.NewTokenBucket(q.mutationCfg)}
		q.sensors[quotaMutation][tags] = s
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

// noteThrottled counts a response throttled by a sensor, for the
// metrics.
func (q *clientQuotas) noteThrottled(kind quotaKind, tags quotaTags, t time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if s := q.sensors[kind][tags]; s != nil {
		s.throttled++
		s.throttle += t
	}
}

// tokens is what the metrics show of a sensor's bucket: its credits
// left, and whether it has one.
func (s *quotaSensor) tokens(now time.Time) (float64, bool) {
	if s.bucket == nil {
		return 0, false
	}
	return s.bucket.Tokens(s.bound, now), true
}
