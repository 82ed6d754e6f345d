package cluster

import "github.com/prometheus/client_golang/prometheus"

// integrityCollector exports what the storage layer's read-back checks
// found: corrupt batches (never served) and the scrubber's progress.
type integrityCollector struct {
	node                             *Node
	corrupt, scrubBytes, scrubPasses *prometheus.Desc
}

func newIntegrityCollector(n *Node) *integrityCollector {
	return &integrityCollector{
		node: n,
		corrupt: prometheus.NewDesc("kbroker_log_corrupt_batches_total",
			"Stored batches that failed their CRC when read or scrubbed; never served (the log line names the segment).", nil, nil),
		scrubBytes: prometheus.NewDesc("kbroker_log_scrubber_bytes_total",
			"Bytes of closed segments the scrubber verified (log.scrubber.bytes.per.second).", nil, nil),
		scrubPasses: prometheus.NewDesc("kbroker_log_scrubber_passes_total",
			"Completed scrubber passes over every closed segment.", nil, nil),
	}
}

func (c *integrityCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.corrupt
	ch <- c.scrubBytes
	ch <- c.scrubPasses
}

func (c *integrityCollector) Collect(ch chan<- prometheus.Metric) {
	logs := c.node.logs
	if logs == nil {
		return // not started yet
	}
	bytes, passes, _ := logs.ScrubStats()
	ch <- prometheus.MustNewConstMetric(c.corrupt, prometheus.CounterValue, float64(logs.Corruptions().Count()))
	ch <- prometheus.MustNewConstMetric(c.scrubBytes, prometheus.CounterValue, float64(bytes))
	ch <- prometheus.MustNewConstMetric(c.scrubPasses, prometheus.CounterValue, float64(passes))
}
