// Package bench is the kbroker binary's benchmark harness and load tool:
//
//   - Run is "kbroker bench": a local three-node kbroker cluster measured
//     next to franz-go's in-memory kfake in the same run (compare), and the
//     failover, rolling, newtopic, reassign and scale modes
//     (bench_<mode>.go), each on nodes it starts itself.
//   - Perf is "kbroker perf produce|consume", in the spirit of Kafka's
//     kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh, against
//     any cluster. It shares the load, rate and percentile code with Run.
//
// It sees brokers as an operator does: "kbroker serve" processes it
// starts, signals and kills (the binary that links this package, or the
// one --kbroker names), their admin HTTP listener (readiness, pprof) and
// /proc, and Kafka clients (franz-go). So it must never import the
// broker's packages (cluster, replication, metadata, storage, config,
// wire, security): a figure measured through them would not be a
// client's. Nor does it import cmd/kbroker or internal/admincli; its
// flag helpers shared with them are in internal/cliflag.
package bench
