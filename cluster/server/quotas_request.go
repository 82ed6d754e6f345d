package server

import (
	"time"

	"github.com/kbroker/kbroker/cluster/quotas"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request accounting (called from conn.go).

// quotaPrincipal is the user name quotas are looked up by: the
// principal's name, ANONYMOUS when unauthenticated, as in Kafka.
func (rc *RequestContext) quotaUser() string { return rc.Principal.Name }

func (rc *RequestContext) quotaClientID() string {
	if rc.Header.ClientID == nil {
		return ""
	}
	return *rc.Header.ClientID
}

// quotaExempt tells requests no client quota applies to: inter-broker
// traffic (follower fetches, transaction markers), as Kafka exempts
// cluster actions.
func (rc *RequestContext) quotaExempt(req kmsg.Request) bool {
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		return r.ReplicaID >= 0
	case *kmsg.WriteTxnMarkersRequest:
		return true
	}
	return false
}

// quotaThrottle records a finished request against its quotas and
// returns the throttle time to tell the client. resp is nil for an
// acks=0 produce, which is still counted and muted, as in Kafka.
func (rc *RequestContext) quotaThrottle(resp kmsg.Response) time.Duration {
	q := rc.conn.srv.Quotas
	if q == nil || rc.exempt {
		return 0
	}
	now := time.Now()
	user, client := rc.quotaUser(), rc.quotaClientID()
	var t time.Duration
	switch rc.Header.APIKey {
	case 0: // Produce: the request's bytes
		t = q.Record(quotas.Produce, user, client, float64(rc.requestBytes), 0, now)
	case 1: // Fetch: the records returned
		if f, ok := resp.(*kmsg.FetchResponse); ok {
			t = q.Record(quotas.Fetch, user, client, float64(fetchRecordBytes(f)), 0, now)
		}
	}
	// CreateTopics, CreatePartitions, DeleteTopics: their handler spent
	// the controller mutation quota (quotas_mutation.go).
	if mt := rc.mutationThrottle.left(now); mt > 0 {
		q.NoteThrottled(quotas.Mutation, rc.mutationThrottle.tags, mt)
		t = max(t, mt)
	}
	if rc.handlerTime > 0 {
		// Kafka caps the request-time throttle at one window.
		t = max(t, q.Record(quotas.Request, user, client, float64(rc.handlerTime.Nanoseconds())*quotas.NanosToPercent, q.Window(), now))
	}
	return t
}

// requestTimeThrottle records the handler time of a request answered
// later against request_percentage.
func (rc *RequestContext) requestTimeThrottle(took time.Duration) time.Duration {
	q := rc.conn.srv.Quotas
	if q == nil || rc.exempt {
		return 0
	}
	return q.Record(quotas.Request, rc.quotaUser(), rc.quotaClientID(), float64(took.Nanoseconds())*quotas.NanosToPercent, q.Window(), time.Now())
}

func fetchRecordBytes(f *kmsg.FetchResponse) int {
	n := 0
	for i := range f.Topics {
		for j := range f.Topics[i].Partitions {
			n += len(f.Topics[i].Partitions[j].RecordBatches)
		}
	}
	return n
}
