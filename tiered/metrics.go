package tiered

import "github.com/prometheus/client_golang/prometheus"

// metrics are Kafka's RemoteLogManager metrics under kbroker's names.
type metrics struct {
	copyBytes, copyErrors, deleteErrors, fetchBytes, fetchErrors *prometheus.CounterVec
	remoteSize, copyLag                                          *prometheus.GaugeVec
}

func newMetrics() *metrics {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"topic"})
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"topic"})
	}
	return &metrics{
		copyBytes:    counter("kbroker_remote_copy_bytes_total", "Segment bytes copied to remote storage, by topic (Kafka's RemoteCopyBytesPerSec)."),
		copyErrors:   counter("kbroker_remote_copy_errors_total", "Segment copies to remote storage that failed, by topic (RemoteCopyErrorsPerSec)."),
		deleteErrors: counter("kbroker_remote_delete_errors_total", "Remote segment deletions that failed, by topic (RemoteDeleteErrorsPerSec)."),
		fetchBytes:   counter("kbroker_remote_fetch_bytes_total", "Record bytes read from remote storage for consumers, by topic (RemoteFetchBytesPerSec)."),
		fetchErrors:  counter("kbroker_remote_fetch_errors_total", "Consumer reads from remote storage that failed, by topic (RemoteFetchErrorsPerSec)."),
		remoteSize:   gauge("kbroker_remote_log_size_bytes", "Bytes of the finished remote segments of the partitions this broker leads, by topic (RemoteLogSizeBytes)."),
		copyLag:      gauge("kbroker_remote_copy_lag_bytes", "Bytes of closed segments below the high watermark not yet copied, of the partitions this broker leads, by topic (RemoteCopyLagBytes)."),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.copyBytes, m.copyErrors, m.deleteErrors, m.fetchBytes, m.fetchErrors, m.remoteSize, m.copyLag}
}

// setGauges replaces the gauges with this round's values.
func (m *metrics) setGauges(remoteSize, lag map[string]int64) {
	m.remoteSize.Reset()
	m.copyLag.Reset()
	for t, v := range remoteSize {
		m.remoteSize.WithLabelValues(t).Set(float64(v))
	}
	for t, v := range lag {
		m.copyLag.WithLabelValues(t).Set(float64(v))
	}
}
