package cluster

// A broker registers how many partition replicas it can host
// (metadata.BrokerRegistration.PartitionCapacity), and the controller
// refuses a CreateTopics or CreatePartitions that would place more on it.
// Without this a large CreateTopics is committed and then fails on the
// broker with "too many open files", leaving partitions it cannot serve.
//
// The capacity is the smaller of max.broker.partitions and what the
// process's file-descriptor limit (RLIMIT_NOFILE, as Go raised it at
// start to the hard limit) leaves for logs:
//
//	(limit - reserve) / filesPerPartition
//
// Descriptors a partition replica holds (storage/segment.go, txnindex.go):
// every segment of the log keeps its .log, .index and .timeindex open for
// the life of the log, and a .txnindex once a transaction aborted in it.
// A new partition has one segment, so filesPerPartition counts three; a
// partition that rolled many segments holds more, which the reserve and
// max.broker.partitions must absorb (as in Kafka, whose guidance is to
// size the ulimit for segments, not partitions).
//
// The reserve is for everything else: client and replica connections,
// raft's transport and log, checkpoint files written by rename. It is a
// quarter of the limit, at least minFDReserve.

const (
	filesPerPartition = 3
	minFDReserve      = 64
)

// partitionCapacity is the replicas a broker with a file-descriptor limit
// of nofile can host, capped at maxBrokerPartitions (<= 0: no cap). A
// limit of 0 (unlimited or unknown) gives the cap. It is at least 1,
// because 0 registers "not reported" (a limit this low leaves the broker
// unusable anyway).
func partitionCapacity(nofile uint64, maxBrokerPartitions int64) int64 {
	if nofile == 0 {
		return max(maxBrokerPartitions, 0)
	}
	reserve := max(uint64(minFDReserve), nofile/4)
	if nofile <= reserve+filesPerPartition {
		return 1
	}
	c := int64(min((nofile-reserve)/filesPerPartition, 1<<62))
	if maxBrokerPartitions > 0 {
		c = min(c, maxBrokerPartitions)
	}
	return c
}

// partitionCapacity is this broker's capacity to register (capacity.go).
func (n *Node) partitionCapacity() int64 {
	limit, err := fileLimit()
	if err != nil {
		n.logger.Warn("cannot read the file-descriptor limit; registering max.broker.partitions as the partition capacity", "error", err)
	}
	c := partitionCapacity(limit, int64(n.cfg.MaxBrokerPartitions))
	n.logger.Info("partition capacity", "replicas", c, "nofile", limit, "files_per_partition", filesPerPartition)
	return c
}
