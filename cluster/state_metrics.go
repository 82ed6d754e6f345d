package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kbroker/kbroker/cluster/groupcoord"
	"github.com/kbroker/kbroker/replication"
)

// The consumer lag metrics' bounds (at most this many series each, plus
// one of the rest): a broker coordinating thousands of groups must not
// flood Prometheus. The quota metrics are bounded the same way.
const (
	maxLagPartitionSeries = 1000
	maxLagGroupSeries     = 200
	otherLabel            = "<other>"
)

// stateCollector reads the node's state at scrape time: partition
// offsets, replication health, purgatory sizes and Raft. Reading on
// scrape keeps the hot paths free of metric updates.
type stateCollector struct {
	node *Node

	logEndOffset, highWatermark, logStartOffset *prometheus.Desc
	underReplicated, offline, leaders           *prometheus.Desc
	underMinISR, atMinISR                       *prometheus.Desc
	logSize, logDirSize                         *prometheus.Desc
	groupLag, groupLagSum, groupLagUnknown      *prometheus.Desc
	isrSize                                     *prometheus.Desc
	purgatorySize                               *prometheus.Desc
	raftState, raftTerm, raftCommit, raftApply  *prometheus.Desc
	brokers                                     *prometheus.Desc
	isrShrinks, isrExpands, groups              *prometheus.Desc
	openTxns, timedOutTxns                      *prometheus.Desc
	offlineLogDirs, offlineReplicas             *prometheus.Desc
	// Fetch sessions (KIP-227): this broker's cache (leader and
	// consumer side), and its replica fetchers' requests.
	fetchSessions, fetchSessionPartitions, fetchSessionEvictions       *prometheus.Desc
	replicaFetchRequests, replicaFetchPartitions, replicaSessionResets *prometheus.Desc
}

func newStateCollector(n *Node) *stateCollector {
	tp := []string{"topic", "partition"}
	return &stateCollector{
		node:            n,
		logEndOffset:    prometheus.NewDesc("kbroker_partition_log_end_offset", "Log end offset of each hosted partition.", tp, nil),
		highWatermark:   prometheus.NewDesc("kbroker_partition_high_watermark", "High watermark of each hosted partition.", tp, nil),
		logStartOffset:  prometheus.NewDesc("kbroker_partition_log_start_offset", "Log start offset of each hosted partition.", tp, nil),
		isrSize:         prometheus.NewDesc("kbroker_partition_isr_size", "ISR size of each partition this broker leads.", tp, nil),
		underReplicated: prometheus.NewDesc("kbroker_under_replicated_partitions", "Partitions this broker leads whose ISR is smaller than their replica set.", nil, nil),
		leaders:         prometheus.NewDesc("kbroker_leader_partitions", "Partitions this broker leads.", nil, nil),
		underMinISR:     prometheus.NewDesc("kbroker_under_min_isr_partitions", "Partitions this broker leads whose ISR is smaller than their effective min.insync.replicas (the topic's, at most the replica count): acks=all produces to them fail with NOT_ENOUGH_REPLICAS (Kafka's UnderMinIsrPartitionCount).", nil, nil),
		atMinISR:        prometheus.NewDesc("kbroker_at_min_isr_partitions", "Partitions this broker leads whose ISR is exactly their effective min.insync.replicas: one more replica lost stops acks=all produces (Kafka's AtMinIsrPartitionCount).", nil, nil),
		logSize:         prometheus.NewDesc("kbroker_log_size_bytes", "Bytes of the segments of each partition log this broker holds, leader or follower (Kafka's kafka.log Log Size): one series per hosted partition, as Kafka.", tp, nil),
		logDirSize:      prometheus.NewDesc("kbroker_log_dir_size_bytes", "Bytes of the partition logs in each online log directory, the future replicas being moved into it included.", []string{"dir"}, nil),
		groupLag: prometheus.NewDesc("kbroker_consumer_group_lag",
			fmt.Sprintf("Consumer lag (high watermark minus committed offset, at least 0) of each partition a group this broker coordinates has committed, for the partitions this broker hosts (a follower's high watermark trails the leader's by one fetch at most). At most %d series: the largest lags, the rest summed under group, topic and partition %q.", maxLagPartitionSeries, otherLabel),
			[]string{"group", "topic", "partition"}, nil),
		groupLagSum: prometheus.NewDesc("kbroker_consumer_group_lag_sum",
			fmt.Sprintf("Sum of the consumer lag of every partition of kbroker_consumer_group_lag of a group this broker coordinates, whether shown there or not. At most %d groups: the largest sums, the rest summed under group %q.", maxLagGroupSeries, otherLabel),
			[]string{"group"}, nil),
		groupLagUnknown: prometheus.NewDesc("kbroker_consumer_group_lag_unknown_partitions",
			fmt.Sprintf("Committed partitions of a group this broker coordinates whose high watermark it does not know (it hosts no replica of them), left out of the lag metrics; the groups of kbroker_consumer_group_lag_sum, the rest under %q.", otherLabel),
			[]string{"group"}, nil),
		offline:                prometheus.NewDesc("kbroker_offline_partitions", "Partitions with no leader (reported by the active controller, 0 elsewhere).", nil, nil),
		purgatorySize:          prometheus.NewDesc("kbroker_purgatory_size", "Requests waiting in each purgatory.", []string{"purgatory"}, nil),
		raftState:              prometheus.NewDesc("kbroker_raft_state", "1 for this node's current Raft state.", []string{"state"}, nil),
		raftTerm:               prometheus.NewDesc("kbroker_raft_term", "Current Raft term.", nil, nil),
		raftCommit:             prometheus.NewDesc("kbroker_raft_commit_index", "Raft commit index.", nil, nil),
		raftApply:              prometheus.NewDesc("kbroker_raft_applied_index", "Raft applied index.", nil, nil),
		brokers:                prometheus.NewDesc("kbroker_brokers", "Registered brokers by fencing state, from the metadata image.", []string{"state"}, nil),
		isrShrinks:             prometheus.NewDesc("kbroker_isr_shrinks_total", "ISR shrinks this broker proposed as leader and the controller committed.", nil, nil),
		isrExpands:             prometheus.NewDesc("kbroker_isr_expands_total", "ISR expands this broker proposed as leader and the controller committed.", nil, nil),
		groups:                 prometheus.NewDesc("kbroker_groups", "Consumer groups this broker coordinates, by state.", []string{"state"}, nil),
		openTxns:               prometheus.NewDesc("kbroker_open_transactions", "Ongoing transactions this broker coordinates.", nil, nil),
		offlineLogDirs:         prometheus.NewDesc("kbroker_offline_log_dirs", "Log directories taken offline by an I/O error (Kafka's OfflineLogDirectoryCount).", nil, nil),
		offlineReplicas:        prometheus.NewDesc("kbroker_offline_replicas", "Replicas this broker should host but cannot open (their log dir is offline, or their log failed to open).", nil, nil),
		fetchSessions:          prometheus.NewDesc("kbroker_fetch_sessions", "Incremental fetch sessions (KIP-227) this broker keeps for followers and consumers.", nil, nil),
		fetchSessionPartitions: prometheus.NewDesc("kbroker_fetch_session_partitions", "Partitions cached across this broker's fetch sessions.", nil, nil),
		fetchSessionEvictions:  prometheus.NewDesc("kbroker_fetch_session_evictions_total", "Fetch sessions evicted to make room for a new one.", nil, nil),
		replicaFetchRequests:   prometheus.NewDesc("kbroker_replica_fetch_requests_total", "Fetch requests this broker's replica fetchers sent, by type: full (every partition named), incremental (only the changed ones, KIP-227) or side (sessionless, for partitions that became ready while the session's fetch waited at the leader).", []string{"type"}, nil),
		replicaFetchPartitions: prometheus.NewDesc("kbroker_replica_fetch_request_partitions_total", "Partitions named in the replica fetchers' Fetch requests, by request type; over kbroker_replica_fetch_requests_total, the partitions per request.", []string{"type"}, nil),
		replicaSessionResets:   prometheus.NewDesc("kbroker_replica_fetch_session_resets_total", "Replica fetchers' fetch sessions the leader refused (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH), each followed by a full request.", nil, nil),
		timedOutTxns:           prometheus.NewDesc("kbroker_transaction_timeout_aborts_total", "Transactions this broker's coordinator aborted because they outlived their timeout.", nil, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.node
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.purgatorySize, float64(n.produceWaiters.Len()), "produce")
	if n.logs != nil {
		gauge(c.offlineLogDirs, float64(n.logs.OfflineDirCount()))
		c.collectLogSizes(gauge)
	}
	gauge(c.purgatorySize, float64(n.fetchWaiters.Len()), "fetch")
	if n.replicas != nil {
		under, underMin, atMin, leading := 0, 0, 0, 0
		for _, p := range n.replicas.Partitions() {
			id := strconv.Itoa(int(p.TP.Partition))
			gauge(c.logEndOffset, float64(p.LogEndOffset()), p.TP.Topic, id)
			gauge(c.highWatermark, float64(p.HighWatermark()), p.TP.Topic, id)
			gauge(c.logStartOffset, float64(p.LogStartOffset()), p.TP.Topic, id)
			if st := p.State(); st.Leader == n.cfg.NodeID {
				leading++
				gauge(c.isrSize, float64(len(st.ISR)), p.TP.Topic, id)
				if len(st.ISR) < len(st.Replicas) {
					under++
				}
				switch minISRState(len(st.ISR), len(st.Replicas), st.Config.MinInsyncReplicas) {
				case belowMinISR:
					underMin++
				case atMinISR:
					atMin++
				}
			}
		}
		gauge(c.underReplicated, float64(under))
		gauge(c.underMinISR, float64(underMin))
		gauge(c.atMinISR, float64(atMin))
		c.collectLag(ch, n.replicas)
		gauge(c.offlineReplicas, float64(len(n.replicas.OfflineReplicas())))
		gauge(c.leaders, float64(leading))
		shrinks, expands := n.replicas.ISRChanges()
		ch <- prometheus.MustNewConstMetric(c.isrShrinks, prometheus.CounterValue, float64(shrinks))
		ch <- prometheus.MustNewConstMetric(c.isrExpands, prometheus.CounterValue, float64(expands))
		fs := n.replicas.FollowerFetchStats()
		ch <- prometheus.MustNewConstMetric(c.replicaFetchRequests, prometheus.CounterValue, float64(fs.FullRequests), "full")
		ch <- prometheus.MustNewConstMetric(c.replicaFetchRequests, prometheus.CounterValue, float64(fs.IncrementalRequests), "incremental")
		ch <- prometheus.MustNewConstMetric(c.replicaFetchPartitions, prometheus.CounterValue, float64(fs.FullPartitions), "full")
		ch <- prometheus.MustNewConstMetric(c.replicaFetchPartitions, prometheus.CounterValue, float64(fs.IncrementalPartitions), "incremental")
		ch <- prometheus.MustNewConstMetric(c.replicaFetchRequests, prometheus.CounterValue, float64(fs.SideRequests), "side")
		ch <- prometheus.MustNewConstMetric(c.replicaFetchPartitions, prometheus.CounterValue, float64(fs.SidePartitions), "side")
		ch <- prometheus.MustNewConstMetric(c.replicaSessionResets, prometheus.CounterValue, float64(fs.SessionResets))
	}
	sessions, cached, evictions := n.fetchSessions.Stats()
	gauge(c.fetchSessions, float64(sessions))
	gauge(c.fetchSessionPartitions, float64(cached))
	ch <- prometheus.MustNewConstMetric(c.fetchSessionEvictions, prometheus.CounterValue, float64(evictions))
	for state, count := range n.groups.GroupCounts() {
		gauge(c.groups, float64(count), state)
	}
	gauge(c.openTxns, float64(n.txns.OpenTransactions()))
	ch <- prometheus.MustNewConstMetric(c.timedOutTxns, prometheus.CounterValue, float64(n.txns.TimedOutAborts()))
	if n.store == nil {
		return
	}
	img := n.store.Image()
	offline := 0
	if n.store.IsController() {
		for _, t := range img.Topics {
			for _, p := range t.Partitions {
				if p.Leader < 0 {
					offline++
				}
			}
		}
	}
	gauge(c.offline, float64(offline))
	fenced, unfenced := 0, 0
	for _, b := range img.Brokers {
		if b.Fenced {
			fenced++
		} else {
			unfenced++
		}
	}
	gauge(c.brokers, float64(fenced), "fenced")
	gauge(c.brokers, float64(unfenced), "unfenced")
	rs := n.store.RaftStatus()
	for _, s := range []string{"Leader", "Follower", "Candidate", "Shutdown"} {
		v := 0.0
		if rs.State == s {
			v = 1
		}
		gauge(c.raftState, v, s)
	}
	gauge(c.raftTerm, float64(rs.Term))
	gauge(c.raftCommit, float64(rs.CommitIndex))
	gauge(c.raftApply, float64(rs.AppliedIndex))
}

// minISR is where a led partition's ISR stands against its effective
// min.insync.replicas.
type minISR int

const (
	aboveMinISR minISR = iota
	atMinISR
	belowMinISR
)

// minISRState compares an ISR with the effective min.insync.replicas of a
// partition of replicas replicas, as the leader's acks=all check does
// (replication.EffectiveMinISR): Kafka's isUnderMinIsr and isAtMinIsr.
func minISRState(isr, replicas int, minInsyncReplicas int32) minISR {
	switch m := replication.EffectiveMinISR(minInsyncReplicas, replicas); {
	case isr < m:
		return belowMinISR
	case isr == m:
		return atMinISR
	}
	return aboveMinISR
}

// collectLogSizes exports the size of every open log and the total of each
// online log directory (what DescribeLogDirs reports). A log's size is a
// sum over its segments under the log's read lock.
func (c *stateCollector) collectLogSizes(gauge func(*prometheus.Desc, float64, ...string)) {
	for _, d := range c.node.logs.LogDirs() {
		if d.Offline != nil {
			continue // its logs are closed; kbroker_offline_log_dirs counts it
		}
		var total int64
		for _, l := range d.Logs {
			size := l.Log.Size()
			total += size
			gauge(c.logSize, float64(size), l.Topic, strconv.Itoa(int(l.Partition)))
		}
		for _, f := range d.Futures {
			total += f.Size
		}
		gauge(c.logDirSize, float64(total), d.Path)
	}
}

// collectLag exports the consumer lag the group coordinator computes from
// its committed offsets and the high watermarks of the partitions this
// broker hosts; no request leaves the broker.
func (c *stateCollector) collectLag(ch chan<- prometheus.Metric, replicas *replication.Manager) {
	rep := c.node.groups.Lag(func(topic string, partition int32) (int64, bool) {
		p, err := replicas.Partition(replication.TopicPartition{Topic: topic, Partition: partition})
		if err != nil {
			return 0, false
		}
		return p.HighWatermark(), true
	})
	parts, groups := boundLagSeries(rep, maxLagPartitionSeries, maxLagGroupSeries)
	for _, p := range parts {
		ch <- prometheus.MustNewConstMetric(c.groupLag, prometheus.GaugeValue, float64(p.lag), p.group, p.topic, p.partition)
	}
	for _, g := range groups {
		ch <- prometheus.MustNewConstMetric(c.groupLagSum, prometheus.GaugeValue, float64(g.Lag), g.Group)
		ch <- prometheus.MustNewConstMetric(c.groupLagUnknown, prometheus.GaugeValue, float64(g.Unknown), g.Group)
	}
}

// lagSeries is one series of kbroker_consumer_group_lag.
type lagSeries struct {
	group, topic, partition string
	lag                     int64
}

// boundLagSeries keeps the maxParts partitions and the maxGroups groups
// with the largest lag (ties by name, so the series do not flap), and
// sums the rest into one "<other>" series each.
func boundLagSeries(rep groupcoord.LagReport, maxParts, maxGroups int) ([]lagSeries, []groupcoord.GroupLag) {
	ps := slices.Clone(rep.Partitions)
	slices.SortStableFunc(ps, func(a, b groupcoord.PartitionLag) int { return cmp.Compare(b.Lag, a.Lag) })
	parts := make([]lagSeries, 0, min(len(ps), maxParts+1))
	for i, p := range ps {
		if i == maxParts {
			rest := lagSeries{group: otherLabel, topic: otherLabel, partition: otherLabel}
			for _, p := range ps[i:] {
				rest.lag += p.Lag
			}
			parts = append(parts, rest)
			break
		}
		parts = append(parts, lagSeries{p.Group, p.Topic, strconv.Itoa(int(p.Partition)), p.Lag})
	}
	gs := slices.Clone(rep.Groups)
	slices.SortFunc(gs, func(a, b groupcoord.GroupLag) int {
		return cmp.Or(cmp.Compare(b.Lag, a.Lag), strings.Compare(a.Group, b.Group))
	})
	if len(gs) > maxGroups {
		rest := groupcoord.GroupLag{Group: otherLabel}
		for _, g := range gs[maxGroups:] {
			rest.Lag += g.Lag
			rest.Unknown += g.Unknown
		}
		gs = append(gs[:maxGroups], rest)
	}
	return parts, gs
}
