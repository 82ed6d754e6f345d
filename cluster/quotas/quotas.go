package quotas

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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

// Kind is one of Kafka's client quota types.
type Kind int

const (
	Produce  Kind = iota // producer_byte_rate: produce request bytes
	Fetch                // consumer_byte_rate: fetch response record bytes
	Request              // request_percentage: handler time
	Mutation             // controller_mutation_rate: partitions created or deleted
	numKinds
)

var kindKey = [numKinds]string{metadata.QuotaProducerByteRate, metadata.QuotaConsumerByteRate, metadata.QuotaRequestPercentage, metadata.QuotaControllerMutationRate}
var kindName = [numKinds]string{"produce", "fetch", "request", "controller_mutation"}

// NanosToPercent turns handler time into request_percentage units: the
// percentage of one thread's second (Kafka's NanosToPercentagePerSecond).
const NanosToPercent = 100.0 / float64(time.Second)

// sensorExpiry forgets a sensor idle this long (Kafka: one hour).
const sensorExpiry = time.Hour

// maxQuotaMetricSeries bounds the label sets exported per quota kind; the
// busiest sensors are shown, the rest summed under client_id "<other>".
const maxQuotaMetricSeries = 50

// Tags names a sensor as Kafka's quota metric tags do: the user and
// the client id of the entity that matched ("" for a type the entity
// does not have), so e.g. a user quota is shared by all its clients.
type Tags struct{ user, clientID string }

type sensor struct {
	rate      *quota.Rate
	bucket    *quota.TokenBucket // controller_mutation_rate only
	bound     float64
	lastUsed  time.Time
	throttled int64         // responses throttled
	throttle  time.Duration // their total throttle time
}

// Manager holds the sensors of one broker.
type Manager struct {
	cfg         quota.Config
	mutationCfg quota.Config // controller.quota.window.*
	image       func() *metadata.Image

	mu        sync.Mutex
	sensors   [numKinds]map[Tags]*sensor
	ipSensors map[string]*sensor // connection_creation_rate, by ip
	lastSweep time.Time
}

func New(cfg, mutationCfg quota.Config, image func() *metadata.Image) *Manager {
	q := &Manager{cfg: cfg, mutationCfg: mutationCfg, image: image, ipSensors: map[string]*sensor{}}
	for k := range q.sensors {
		q.sensors[k] = map[Tags]*sensor{}
	}
	return q
}

// Lookup finds the quota of kind for a user and client id, in Kafka's
// order of precedence, and the tags of the sensor it is recorded in.
func Lookup(img *metadata.Image, kind Kind, user, clientID string) (float64, Tags, bool) {
	if len(img.Quotas) == 0 {
		return 0, Tags{}, false
	}
	key := kindKey[kind]
	u, c, du, dc := metadata.Named(user), metadata.Named(clientID), metadata.DefaultQuotaName, metadata.DefaultQuotaName
	candidates := [...]struct {
		e    metadata.QuotaEntity
		tags Tags
	}{
		{metadata.QuotaEntity{User: u, ClientID: c}, Tags{user, clientID}},
		{metadata.QuotaEntity{User: u, ClientID: dc}, Tags{user, clientID}},
		{metadata.QuotaEntity{User: u}, Tags{user, ""}},
		{metadata.QuotaEntity{User: du, ClientID: c}, Tags{user, clientID}},
		{metadata.QuotaEntity{User: du, ClientID: dc}, Tags{user, clientID}},
		{metadata.QuotaEntity{User: du}, Tags{user, ""}},
		{metadata.QuotaEntity{ClientID: c}, Tags{"", clientID}},
		{metadata.QuotaEntity{ClientID: dc}, Tags{"", clientID}},
	}
	for _, cand := range candidates {
		if v, ok := img.Quotas[cand.e][key]; ok {
			return v, cand.tags, true
		}
	}
	return 0, Tags{}, false
}

// Record adds v to the sensor of kind that applies to user and clientID
// and returns the throttle time (0 when none applies or within quota).
// limit caps it (0: none).
func (q *Manager) Record(kind Kind, user, clientID string, v float64, limit time.Duration, now time.Time) time.Duration {
	bound, tags, ok := Lookup(q.image(), kind, user, clientID)
	if !ok {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sweepLocked(now)
	s := q.sensors[kind][tags]
	if s == nil {
		s = &sensor{rate: quota.NewRate(q.cfg)}
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
func (q *Manager) sweepLocked(now time.Time) {
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

// ConnectionThrottle records a new connection from ip against its
// connection_creation_rate (the ip's own, else the default ip's) and
// returns how long to hold it before closing it when that is exceeded,
// as Kafka's ConnectionQuotas does: capped at one window, and a refused
// connection is not counted.
func (q *Manager) ConnectionThrottle(ip string, now time.Time) time.Duration {
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
		s = &sensor{rate: quota.NewRate(q.cfg)}
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

// Metrics.

// Collector exports, per quota kind and sensor (bounded by
// maxQuotaMetricSeries), the measured rate, the bound, and the throttled
// responses and their throttle time; for controller_mutation also the
// credits left in the token bucket (Kafka's "tokens" metric).
type Collector struct {
	q                                         *Manager
	rate, bound, throttled, throttleS, tokens *prometheus.Desc
}

func NewCollector(q *Manager) *Collector {
	labels := []string{"quota", "user", "client_id"}
	return &Collector{
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

func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.rate
	ch <- c.bound
	ch <- c.throttled
	ch <- c.throttleS
	ch <- c.tokens
}

func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	type row struct {
		tags                  Tags
		rate, bound, throttle float64
		throttled             int64
		tokens                float64
		bucket                bool
	}
	now := time.Now()
	c.q.mu.Lock()
	var all [numKinds][]row
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
			other := row{tags: Tags{clientID: "<other>"}}
			for _, r := range rows[maxQuotaMetricSeries:] {
				other.rate += r.rate
				other.throttle += r.throttle
				other.throttled += r.throttled
			}
			rows = append(rows[:maxQuotaMetricSeries], other)
		}
		for _, r := range rows {
			lv := []string{kindName[k], r.tags.user, r.tags.clientID}
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

// Window is the span of the client quotas' samples (quota.window.num ×
// quota.window.size.seconds): the longest a request-time throttle lasts.
func (q *Manager) Window() time.Duration { return q.cfg.Window }

// Applies tells whether a quota of kind applies to user and clientID.
func (q *Manager) Applies(kind Kind, user, clientID string) bool {
	_, _, ok := Lookup(q.image(), kind, user, clientID)
	return ok
}
