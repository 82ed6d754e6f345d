package server

import (
	"fmt"
	"time"

	"github.com/kbroker/kbroker/cluster/quotas"
	"github.com/twmb/franz-go/pkg/kerr"
)

// MutationQuota is the controller mutation quota of one request (Kafka's
// ControllerMutationQuota). A nil *MutationQuota is no quota: every
// mutation is accepted.
type MutationQuota struct {
	rc     *RequestContext
	strict bool
}

// MutationQuota returns the request's controller mutation quota, strict
// from version strictSince, or nil when none applies to the request's
// user and client id.
func (rc *RequestContext) MutationQuota(strictSince int16) *MutationQuota {
	q := rc.conn.srv.Quotas
	if q == nil || rc.exempt {
		return nil
	}
	if !q.Applies(quotas.Mutation, rc.quotaUser(), rc.quotaClientID()) {
		return nil
	}
	return &MutationQuota{rc: rc, strict: rc.Header.APIVersion >= strictSince}
}

// Record asks the quota for the partitions a topic creates or deletes.
// The error (strict quotas only) is THROTTLING_QUOTA_EXCEEDED: the topic
// must not be committed.
func (m *MutationQuota) Record(partitions int) error {
	if m == nil || partitions <= 0 {
		return nil
	}
	rc := m.rc
	now := time.Now()
	ok, t, tags := rc.conn.srv.Quotas.RecordMutations(rc.quotaUser(), rc.quotaClientID(), float64(partitions), m.strict, now)
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
	tags quotas.Tags
}

// left is what remains of the throttle at now.
func (m mutationThrottle) left(now time.Time) time.Duration {
	if m.t <= 0 {
		return 0
	}
	return max(0, m.t-now.Sub(m.at))
}
