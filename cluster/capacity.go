package cluster

import "fmt"

// A broker registers how many partition replicas it can host
// (metadata.BrokerRegistration.PartitionCapacity), and the controller
// refuses a CreateTopics or CreatePartitions that would place more on it.
//
// The capacity is max.broker.partitions. The file-descriptor limit
// (RLIMIT_NOFILE, as Go raised it at start to the hard limit) no longer
// bounds it: the storage manager keeps the logs' files in a bounded
// cache of descriptors (storage/filecache.go), sized here to what the
// limit leaves after a reserve, and reopens a file closed for room when
// it is next used. A broker hosting more segments than that budget
// stays within its limit; only its idle partitions' files get closed.
//
// The reserve is for everything else: client and replica connections,
// raft's transport and log, the admin and gossip listeners. It is a
// quarter of the limit, at least minFDReserve.

const (
	minFDReserve = 64
	// minLogFiles is the smallest descriptor budget given to the logs:
	// one log operation uses a few files at once, and a budget below what
	// is in use is only exceeded, never deadlocked (storage pins the
	// descriptors in use), but thrashes.
	minLogFiles = 16
)

// logFileBudget is how many descriptors the logs may hold with a
// file-descriptor limit of nofile; 0 (no bound) when nofile is 0
// (unlimited or unknown).
func logFileBudget(nofile uint64) int {
	if nofile == 0 {
		return 0
	}
	reserve := max(uint64(minFDReserve), nofile/4)
	if nofile <= reserve+minLogFiles {
		return minLogFiles
	}
	return int(min(nofile-reserve, 1<<30))
}

// partitionCapacity is the replicas a broker can host: max.broker.partitions
// (<= 0: not reported).
func partitionCapacity(maxBrokerPartitions int64) int64 {
	return max(maxBrokerPartitions, 0)
}

// limitLogFiles gives the storage manager the descriptor budget of this
// process's file-descriptor limit.
func (n *Node) limitLogFiles() {
	limit, err := fileLimit()
	if err != nil {
		n.logger.Warn("cannot read the file-descriptor limit; the logs' open files are not bounded", "error", err)
	}
	budget := logFileBudget(limit)
	n.logs.SetOpenFileLimit(budget)
	n.logger.Info("log file descriptors", "budget", budget, "nofile", limit)
}

// partitionCapacity is this broker's capacity to register (capacity.go),
// checked against the partitions its log dirs already hold: a broker
// restarted with a lower max.broker.partitions than it hosts logs an
// error saying so. It still starts: refusing to would take every other
// partition down with them.
func (n *Node) partitionCapacity() int64 {
	c := partitionCapacity(int64(n.cfg.MaxBrokerPartitions))
	hosted := int64(n.logs.HostedPartitions())
	n.logger.Info("partition capacity", "replicas", c, "hosted", hosted)
	if msg := capacityShortfall(hosted, int64(n.cfg.MaxBrokerPartitions)); msg != "" {
		n.logger.Error(msg, "hosted", hosted, "capacity", c)
	}
	return c
}

// capacityShortfall explains why a broker holding hosted partition
// replicas is over max.broker.partitions, or is "" when it is not.
func capacityShortfall(hosted, maxBrokerPartitions int64) string {
	if maxBrokerPartitions <= 0 || hosted <= maxBrokerPartitions {
		return ""
	}
	return fmt.Sprintf("the log dirs hold %d partition replicas, more than max.broker.partitions=%d: "+
		"no new replicas are placed here; raise max.broker.partitions or reassign partitions away",
		hosted, maxBrokerPartitions)
}
