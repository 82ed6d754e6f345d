package cluster

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/quota"
	"github.com/kbroker/kbroker/metadata"
)

// Client quotas, enforced as Kafka's ClientQuotaManager and
// ClientRequestQuotaManager do, per broker: each request is recorded
// against the sensor of the most specific quota entity that has a value
// for the quota's key; a sensor over its bound gives a throttle time of
// (rate - bound) / bound of its window. The response carries the time in
// throttle_time_ms and the connection is muted (not read) for it
// (conn.throttle); a response version from before KIP-219 is delayed
// instead, since such clients do not wait by themselves.
//
// A request with no quota applying is not recorded at all, so a broker
// without quotas pays one map lookup per request.
//
// controller_mutation_rate is not a sampled rate but a token bucket,
// spent by the partitions CreateTopics, CreatePartitions and
// DeleteTopics create or delete (quotas_mutation.go).

// quotaKind is one of Kafka's client quota types.
type quotaKind int

const (
	quotaProduce  quotaKind = iota // producer_byte_rate: produce request bytes
	quotaFetch                     // consumer_byte_rate: fetch response record bytes
	quotaRequest                   // request_percentage: handler time
	quotaMutation                  // controller_mutation_rate: partitions created or deleted
	numQuotaKinds
)

var quotaKindKey = [numQuotaKinds]string{metadata.QuotaProducerByteRate, metadata.QuotaConsumerByteRate, metadata.QuotaRequestPercentage, metadata.QuotaControllerMutationRate}
var quotaKindName = [numQuotaKinds]string{"produce", "fetch", "request", "controller_mutation"}

// nanosToPercent turns handler time into request_percentage units: the
// percentage of one thread's second (Kafka's NanosToPercentagePerSecond).
const nanosToPercent = 100.0 / float64(time.Second)

// sensorExpiry forgets a sensor idle this long (Kafka: one hour).
const sensorExpiry = time.Hour

// maxQuotaMetricSeries bounds the label sets exported per quota kind; the
// busiest sensors are shown, the rest summed under client_id "<other>".
const maxQuotaMetricSeries = 50

// quotaTags names a sensor as Kafka's quota metric tags do: the user and
// the client id of the entity that matched ("" for a type the entity
// does not have), so e.g. a user quota is shared by all its clients.
type quotaTags struct{ user, clientID string }

type quotaSensor struct {
	rate      *quota.Rate
	bucket    *quota.TokenBucket // controller_mutation_rate only
	bound     float64
	lastUsed  time.Time
	throttled int64         // responses throttled
	throttle  time.Duration // their total throttle time
}

// clientQuotas holds the sensors of one broker.
type clientQuotas struct {
	cfg         quota.Config
	mutationCfg quota.Config // controller.quota.window.*
	image       func() *metadata.Image

	mu        sync.Mutex
	sensors   [numQuotaKinds]map[quotaTags]*quotaSensor
	ipSensors map[string]*quotaSensor // connection_creation_rate, by ip
	lastSweep time.Time
}

func newClientQuotas(cfg, mutationCfg quota.Config, image func() *metadata.Image) *clientQuotas {
	q := &clientQuotas{cfg: cfg, mutationCfg: mutationCfg, image: image, ipSensors: map[string]*quotaSensor{}}
	for k := range q.sensors {
		q.sensors[k] = map[quotaTags]*quotaSensor{}
	}
	return q
}

// lookup finds the quota of kind for a user and client id, in Kafka's
// order of precedence, and the tags of the sensor it is recorded in.
func lookupQuota(img *metadata.Image, kind quotaKind, user, clientID string) (float64, quotaTags, bool) {
	if len(img.Quotas) == 0 {
		return 0, quotaTags{}, false
	}
	key := quotaKindKey[kind]
	u, c, du, dc := metadata.Named(user), metadata.Named(clientID), metadata.DefaultQuotaName, metadata.DefaultQuotaName
	candidates := [...]struct {
		e    metadata.QuotaEntity
		tags quotaTags
	}{
		{metadata.QuotaEntity{User: u, ClientID: c}, quotaTags{user, clientID}},
		{metadata.QuotaEntity{User: u, ClientID: dc}, quotaTags{user, clientID}},
		{metadata.QuotaEntity{User: u}, quotaTags{user, ""}},
		{metadata.QuotaEntity{User: du, ClientID: c}, quotaTags{user, clientID}},
		{metadata.QuotaEntity{User: du, ClientID: dc}, quotaTags{user, clientID}},
		{metadata.QuotaEntity{User: du}, quotaTags{user, ""}},
		{metadata.QuotaEntity{ClientID: c}, quotaTags{"", clientID}},
		{metadata.QuotaEntity{ClientID: dc}, quotaTags{"", clientID}},
	}
	for _, cand := range candidates {
		if v, ok := img.Quotas[cand.e][key]; ok {
			return v, cand.tags, true
		}
	}
	return 0, quotaTags{}, false
}

// record adds v to the sensor of kind that applies to user and clientID
// and returns the throttle time (0 when none applies or within quota).
// limit caps it (0: none).
func (q *clientQuotas) record(kind quotaKind, user, clientID string, v float64, limit time.Duration, now time.Time) time.Duration {
	bound, tags, ok := lookupQuota(q.image(), kind, user, clientID)
	if !ok {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sweepLocked(now)
	s := q.sensors[kind][tags]
	if s == nil {
		s = &quotaSensor{rate: quota.NewRate(q.cfg)}
		q.sensors[kind][tags] = s
	}
	s.bound, s.lastUsed = bound, now
	s.rate.Record(v, now)
	t := s.rate.Throttle(bound, limit, now)
	if t > 0 {
		s.throttled++
		s.throttle += t
	}
	return t
}

// sweepLocked forgets sensors idle for sensorExpiry, at most once a
// minute, so client ids that come and go do not grow the maps forever.
func (q *clientQuotas) sweepLocked(now time.Time) {
	if now.Sub(q.lastSweep) < time.Minute {
		return
	}
	q.lastSweep = now
	for k := range q.sensors {
		for tags, s := range q.sensors[k] {
			if now.Sub(s.lastUsed) > sensorExpiry {
				delete(q.sensors[k], tags)
			}
		}
	}
	for ip, s := range q.ipSensors {
		if now.Sub(s.lastUsed) > sensorExpiry {
			delete(q.ipSensors, ip)
		}
	}
}

// connectionThrottle records a new connection from ip against its
// connection_creation_rate (the ip's own, else the default ip's) and
// returns how long to hold it before closing it when that is exceeded,
// as Kafka's ConnectionQuotas does: capped at one window, and a refused
// connection is not counted.
func (q *clientQuotas) connectionThrottle(ip string, now time.Time) time.Duration {
	img := q.image()
	if len(img.Quotas) == 0 {
		return 0
	}
	bound, ok := img.Quotas[metadata.QuotaEntity{IP: metadata.Named(ip)}][metadata.QuotaConnectionCreationRate]
	if !ok {
		if bound, ok = img.Quotas[metadata.QuotaEntity{IP: metadata.DefaultQuotaName}][metadata.QuotaConnectionCreationRate]; !ok {
			return 0
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sweepLocked(now)
	s := q.ipSensors[ip]
	if s == nil {
		s = &quotaSensor{rate: quota.NewRate(q.cfg)}
		q.ipSensors[ip] = s
	}
	s.bound, s.lastUsed = bound, now
	s.rate.Record(1, now)
	t := s.rate.Throttle(bound, q.cfg.Window, now)
	if t > 0 {
		s.rate.Record(-1, now)
		s.throttled++
		s.throttle += t
	}
	return t
}

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
	q := rc.conn.srv.quotas
	if q == nil || rc.exempt {
		return 0
	}
	now := time.Now()
	user, client := rc.quotaUser(), rc.quotaClientID()
	var t time.Duration
	switch rc.Header.APIKey {
	case 0: // Produce: the request's bytes
		t = q.record(quotaProduce, user, client, float64(rc.requestBytes), 0, now)
	case 1: // Fetch: the records returned
		if f, ok := resp.(*kmsg.FetchResponse); ok {
			t = q.record(quotaFetch, user, client, float64(fetchRecordBytes(f)), 0, now)
		}
	}
	// CreateTopics, CreatePartitions, DeleteTopics: their handler spent
	// the controller mutation quota (quotas_mutation.go).
	if mt := rc.mutationThrottle.left(now); mt > 0 {
		q.noteThrottled(quotaMutation, rc.mutationThrottle.tags, mt)
		t = max(t, mt)
	}
	if rc.handlerTime > 0 {
		// Kafka caps the request-time throttle at one window.
		t = max(t, q.record(quotaRequest, user, client, float64(rc.handlerTime.Nanoseconds())*nanosToPercent, q.cfg.Window, now))
	}
	return t
}

// requestTimeThrottle records the handler time of a request answered
// later against request_percentage.
func (rc *RequestContext) requestTimeThrottle(took time.Duration) time.Duration {
	q := rc.conn.srv.quotas
	if q == nil || rc.exempt {
		return 0
	}
	return q.record(quotaRequest, rc.quotaUser(), rc.quotaClientID(), float64(took.Nanoseconds())*nanosToPercent, q.cfg.Window, time.Now())
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

// Metrics.

// quotaCollector exports, per quota kind and sensor (bounded by
// maxQuotaMetricSeries), the measured rate, the bound, and the throttled
// responses and their throttle time; for controller_mutation also the
// credits left in the token bucket (Kafka's "tokens" metric).
type quotaCollector struct {
	q                                         *clientQuotas
	rate, bound, throttled, throttleS, tokens *prometheus.Desc
}

func newQuotaCollector(q *clientQuotas) *quotaCollector {
	labels := []string{"quota", "user", "client_id"}
	return &quotaCollector{
		q: q,
		rate: prometheus.NewDesc("kbroker_client_quota_rate",
			"Measured rate of a client quota sensor (bytes/s for produce and fetch, percent of a thread for request, partitions/s for controller_mutation), by quota and entity.", labels, nil),
		bound: prometheus.NewDesc("kbroker_client_quota_bound",
			"Quota of a client quota sensor, by quota and entity.", labels, nil),
		throttled: prometheus.NewDesc("kbroker_client_quota_throttled_total",
			"Responses throttled by a client quota sensor, by quota and entity.", labels, nil),
		throttleS: prometheus.NewDesc("kbroker_client_quota_throttle_seconds_total",
			"Throttle time given by a client quota sensor, by quota and entity.", labels, nil),
		tokens: prometheus.NewDesc("kbroker_client_quota_tokens",
			"Credits (partitions) left in the token bucket of a controller_mutation quota sensor, by entity; below zero the quota is exhausted.", labels, nil),
	}
}

func (c *quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.rate
	ch <- c.bound
	ch <- c.throttled
	ch <- c.throttleS
	ch <- c.tokens
}

func (c *quotaCollector) Collect(ch chan<- prometheus.Metric) {
	type row struct {
		tags                  quotaTags
		rate, bound, throttle float64
		throttled             int64
		tokens                float64
		bucket                bool
	}
	now := time.Now()
	c.q.mu.Lock()
	var all [numQuotaKinds][]row
	for k := range c.q.sensors {
		for tags, s := range c.q.sensors[k] {
			r := row{tags: tags, rate: s.rate.Measure(now), bound: s.bound, throttle: s.throttle.Seconds(), throttled: s.throttled}
			r.tokens, r.bucket = s.tokens(now)
			all[k] = append(all[k], r)
		}
	}
	c.q.mu.Unlock()
	for k, rows := range all {
		sort.Slice(rows, func(i, j int) bool { return rows[i].rate > rows[j].rate })
		if len(rows) > maxQuotaMetricSeries {
			other := row{tags: quotaTags{clientID: "<other>"}}
			for _, r := range rows[maxQuotaMetricSeries:] {
				other.rate += r.rate
				other.throttle += r.throttle
				other.throttled += r.throttled
			}
			rows = append(rows[:maxQuotaMetricSeries], other)
		}
		for _, r := range rows {
			lv := []string{quotaKindName[k], r.tags.user, r.tags.clientID}
			ch <- prometheus.MustNewConstMetric(c.rate, prometheus.GaugeValue, r.rate, lv...)
			if r.tags.clientID != "<other>" {
				ch <- prometheus.MustNewConstMetric(c.bound, prometheus.GaugeValue, r.bound, lv...)
				if r.bucket {
					ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.GaugeValue, r.tokens, lv...)
				}
			}
			ch <- prometheus.MustNewConstMetric(c.throttled, prometheus.CounterValue, float64(r.throttled), lv...)
			ch <- prometheus.MustNewConstMetric(c.throttleS, prometheus.CounterValue, r.throttle, lv...)
		}
	}
}
