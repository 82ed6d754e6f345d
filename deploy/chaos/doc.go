// Command chaos runs an acks=all workload against a three-node kbroker
// cluster while injecting faults (kills, bounces, pauses, network
// isolation, rolling restarts), then heals the cluster and checks that no
// acknowledged write was lost, duplicated or read inconsistently.
//
//	go run ./deploy/chaos --duration 2m             # three local subprocesses
//	go run ./deploy/chaos --security sasl_ssl       # the same, SASL_SSL everywhere
//	go run ./deploy/chaos --target compose          # deploy/docker-compose.yml
//
// It exits 0 when every check passed, 1 on any violation and 2 when the
// run could not be set up.
//
// It drives brokers only as processes and clients, and reads replica
// files through storage for its checker (internal/clustercheck); it must
// never import cluster, replication or metadata.
package main
