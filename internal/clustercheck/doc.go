// Package clustercheck is the one cluster-invariant checker shared by the
// integration tests (itest) and the chaos harness (deploy/chaos):
//
//   - Acks records what producers saw acknowledged; Check compares it with
//     a final read of every partition and reports acknowledged records
//     that are lost (nowhere in the log), misplaced (at another offset than
//     acknowledged), values duplicated at two offsets, offsets that are not
//     contiguous, and offsets acknowledged with two values.
//   - ReplicaLogs / CompareReplicas check that every replica holds the same
//     bytes below the high watermark (storage.ReadLogBelow).
//   - AckTimes / LongestGaps measure client-visible unavailability: the
//     longest time a partition went without an acknowledgement, attributed
//     to the fault that started it.
//   - MetadataFrom / Converged / PartStates / Describe / FullISR read and
//     judge a cluster's metadata as every node reports it.
//
// It is a regular (non-test) package because deploy/chaos is a main
// package; it imports storage, wire/record and franz-go, never the broker.
//
// It sees brokers as a client does (franz-go) and reads replica files
// through storage; it must never import cluster, replication or
// metadata.
package clustercheck
