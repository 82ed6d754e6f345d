// Package share is the state of share groups (KIP-932, queues for
// Kafka): the membership of a group (Group: members, subscriptions, the
// group epoch and an assignment in which several members may share a
// partition), and for one topic partition as one share group consumes it
// (Partition, Kafka's SharePartition) which records are available,
// acquired by a member until a lock ends, acknowledged or archived, how
// often each was delivered, and the share-partition start offset below
// which everything is done. Time is passed in.
//
// The rules it keeps: a record is delivered to one member at a time;
// an acknowledgement names only records its member holds, and a request
// with one that does not is refused whole (INVALID_RECORD_STATE); a
// record released, or whose lock ran out, is delivered again until
// group.share.delivery.count.limit deliveries, then archived; the
// in-flight records never exceed group.share.partition.max.record.locks;
// the persisted state (Snapshot) keeps delivery counts but no locks, so
// after a failover held records are delivered again and the count still
// bounds them.
//
// It is a pure state machine, like cluster/group and cluster/txn: no
// I/O, timers, goroutines or locks; its owner serialises every call.
// records.go encodes the persisted state as versioned records (the shape
// of Kafka's ShareSnapshotKey and ShareSnapshotValue); a version this
// build does not know is refused. It imports kbin only, and must never
// import any kbroker package.
package share
