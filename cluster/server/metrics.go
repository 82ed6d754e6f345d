package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metrics counts requests per API. Each node has its own registry
// so several nodes can run in one test process.
type Metrics struct {
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	BytesIn  *prometheus.CounterVec
	BytesOut *prometheus.CounterVec

	// Connection layer (server.go, conn.go).
	panics       *prometheus.CounterVec
	connections  *prometheus.GaugeVec
	rejected     *prometheus.CounterVec
	closedIdle   prometheus.Counter
	acceptErrors *prometheus.CounterVec
	queuedBytes  prometheus.Gauge
	memWaiting   prometheus.Gauge
	refused      *prometheus.CounterVec
	saslFailures *prometheus.CounterVec
}

func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
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
	m.BytesIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kbroker_topic_bytes_in_total", Help: "Record batch bytes appended by producers, by topic.",
	}, []string{"topic"})
	m.BytesOut = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kbroker_topic_bytes_out_total", Help: "Record batch bytes returned to fetchers (consumers and followers), by topic.",
	}, []string{"topic"})
	m.panics = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kbroker_request_panics_total", Help: "Handler panics recovered (each closed its connection), by API.",
	}, []string{"api"})
	m.connections = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kbroker_connections", Help: "Open client connections, by listener.",
	}, []string{"listener"})
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kbroker_connections_rejected_total", Help: "Connections accepted and closed at once over max.connections (reason=broker) or max.connections.per.ip (reason=ip), or closed after a throttle over the ip's connection_creation_rate quota (reason=ip_rate), by listener.",
	}, []string{"listener", "reason"})
	m.closedIdle = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kbroker_connections_closed_idle_total", Help: "Connections closed after connections.max.idle.ms without a request, or a request frame not received in time.",
	})
	m.acceptErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kbroker_accept_errors_total", Help: "Failed accepts (e.g. EMFILE), by listener.",
	}, []string{"listener"})
	m.queuedBytes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kbroker_request_queued_bytes", Help: "Bytes of requests read and not yet answered (bounded by queued.max.request.bytes).",
	})
	m.memWaiting = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kbroker_connections_waiting_for_request_memory", Help: "Connections that stopped reading until queued.max.request.bytes frees up.",
	})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kbroker_requests_refused_total", Help: "Requests refused before decoding because an array count is over its per-request bound, by API.",
	}, []string{"api"})
	m.saslFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kbroker_sasl_authentication_failures_total", Help: "Failed SASL authentications (each closed its connection), by listener and mechanism.",
	}, []string{"listener", "mechanism"})
	m.Registry.MustRegister(m.requests, m.errors, m.latency, m.BytesIn, m.BytesOut,
		m.panics, m.connections, m.rejected, m.closedIdle, m.acceptErrors, m.queuedBytes, m.memWaiting, m.refused,
		m.saslFailures)
	return m
}

func (m *Metrics) observe(key int16, d time.Duration, err error) {
	name := kmsg.NameForKey(key)
	m.requests.WithLabelValues(name).Inc()
	m.latency.WithLabelValues(name).Observe(d.Seconds())
	if err != nil {
		m.errors.WithLabelValues(name).Inc()
	}
}
