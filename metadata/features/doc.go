// Package features is kbroker's feature levels (Kafka's KIP-584, KIP-778,
// KIP-1022) as values: the features and the levels this build supports,
// the levels a cluster finalizes at its first start and those implied
// before any was finalized, the validation of an UpdateFeatures request
// (Kafka's FeatureControlManager) and the check that a build supports
// what a cluster finalized.
//
// It owns no state and does no I/O. The FeatureLevel record, applying it
// to the image, snapshots and the UpdateFeatures controller operation are
// package metadata's; ApiVersions and DescribeCluster (package cluster)
// read Supported, and the image's finalized levels, from here and from
// metadata. It must never import metadata, raft or any other kbroker
// package: both sides import it.
//
// # Features
//
//	name                 levels  meaning
//	metadata.version     1       the metadata log as it was before feature levels: no
//	                             FeatureLevel record, snapshot format 1; implied while the
//	                             log holds no finalized level, so that builds before
//	                             feature levels can run against the cluster
//	                     2       finalized levels in the log (FeatureLevel records, a
//	                             new cluster's SetClusterID record), snapshot format 2
//	                     3       ISR changes of many partitions in one request and one
//	                             raft entry: the AlterPartition controller operation and
//	                             its PartitionChangeBatch record; below 3 brokers send
//	                             one ChangePartition per partition
//	                     4       delegation tokens (KIP-48): the DelegationToken and
//	                             RemoveDelegationToken records; below 4
//	                             CreateDelegationToken is refused (UNSUPPORTED_VERSION)
//	                     5       tiered storage's RemoteSegment records (remote log
//	                             segment metadata) and their snapshot section
//	kraft.version        1       the voter set changes with AddRaftVoter/RemoveRaftVoter
//	                             (KIP-853), as it always could in kbroker: the
//	                             configuration lives in hashicorp/raft's log, not in
//	                             KRaft's VotersRecord. 0, a static quorum, is not
//	                             supported
//	transaction.version  0, 1    kbroker runs transactions with level 1 semantics either
//	                             way; 2 (KIP-890 part 2) is not supported. Finalized at 0
//	                             (not listed) so that clients keep the EndTxn path
//	                             kbroker serves
//	group.version        0, 1    1: KIP-848 consumer groups are served
//	                             (ConsumerGroupHeartbeat); 0: only classic groups
//
// A new cluster finalizes Bootstrap at its first start. A cluster created
// by a build before feature levels holds no level until an operator
// upgrades metadata.version; until then its levels are Implied (what those
// builds did), which must never change: every build applies the first
// FeatureLevel record on top of them.
//
// A feature other than metadata.version can change only at
// metadata.version 2 or later (a record must carry it). metadata.version
// is never downgraded below a level whose records an older level cannot
// read: from 2 to 1, from 3 to 2 and from 4 to 3 it is
// refused, safe or unsafe, as
// Kafka refuses a downgrade that would lose metadata.
package features
