package cluster

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestMetrics counts requests per API. Each node has its own registry
// so several nodes can run in one test process.
type requestMetrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	bytesIn  *prometheus.CounterVec
	bytesOut *prometheus.CounterVec
}

func newRequestMetrics() *requestMetrics {
	m := &requestMetrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kbroker_requests_total", Help: "Requests handled, by API.",
		}, []string{"api"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kbroker_request_connection_errors_total", Help: "Requests that closed their connection, by API.",
		}, []string{"api"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kbroker_request_handler_seconds",
			Help:    "Time in the handler until the request was appended or queued, by API.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10),
		}, []string{"api"}),
	}
	m.bytesIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kbroker_topic_bytes_in_total", Help: "Record batch bytes appended by producers, by topic.",
	}, []string{"topic"})
	m.bytesOut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kbroker_topic_bytes_out_total", Help: "Record batch bytes returned to fetchers (consumers and followers), by topic.",
	}, []string{"topic"})
	m.registry.MustRegister(m.requests, m.errors, m.latency, m.bytesIn, m.bytesOut)
	return m
}

func (m *requestMetrics) observe(key int16, d time.Duration, err error) {
	name := kmsg.NameForKey(key)
	m.requests.WithLabelValues(name).Inc()
	m.latency.WithLabelValues(name).Observe(d.Seconds())
	if err != nil {
		m.errors.WithLabelValues(name).Inc()
	}
}
