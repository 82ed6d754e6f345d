// Package itest holds kbroker's end-to-end tests: they build the kbroker
// binary once, start it as a subprocess on OS-chosen 127.0.0.1 ports, and
// talk to it with unmodified Kafka clients (franz-go, sarama, kafka-go, kcat
// and the Debian Python clients kafka-python and confluent-kafka).
//
// Every test checks the same property: each record a client saw
// acknowledged reads back at the (partition, offset) it was acknowledged at,
// with the acknowledged value, and each partition's offsets run from 0
// without gaps or duplicates. The checker (internal/clustercheck) is the
// one the chaos harness (deploy/chaos) uses; polling and ports come from
// internal/testutil.
//
// Tests that need kcat or a Python module skip when it is missing;
// `go test -short ./itest/` runs smaller workloads.
//
// Its tests import only internal/clustercheck, internal/testutil,
// security (certificates) and wire/record besides the clients; they must
// never import cluster, replication, metadata or storage: the broker is
// the built binary.
package itest
