// Package observability has no code of its own: its tests hold the
// monitoring files of deploy/ to what a node really serves. They start a
// kbroker node, drive a little traffic through it (a topic, produce and
// consume in a group, a client over its quota, a failed SASL login) so
// that the lazily created series exist, scrape its /metrics, and fail when
// an expression of the Grafana dashboard (deploy/grafana/kbroker.json) or
// of the alerting rules (deploy/prometheus/kbroker-rules.yml) names a
// metric the node does not export, as after a rename; and the lag the
// node reports for its group must be the records produced after the
// group's commit. With promtool on
// PATH they also have Prometheus check the rules, the configuration and
// every dashboard expression.
//
// It builds and runs the binary and sees it as a client and a scraper
// does; it must never import the broker's packages (cluster,
// replication, metadata, storage).
package observability
