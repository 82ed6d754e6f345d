package cluster

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// stateCollector reads the node's state at scrape time: partition
// offsets, replication health, purgatory sizes and Raft. Reading on
// scrape keeps the hot paths free of metric updates.
type stateCollector struct {
	node *Node

	logEndOffset, highWatermark, logStartOffset *prometheus.Desc
	underReplicated, offline, leaders           *prometheus.Desc
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
		node:                   n,
		logEndOffset:           prometheus.NewDesc("kbroker_partition_log_end_offset", "Log end offset of each hosted partition.", tp, nil),
		highWatermark:          prometheus.NewDesc("kbroker_partition_high_watermark", "High watermark of each hosted partition.", tp, nil),
		logStartOffset:         prometheus.NewDesc("kbroker_partition_log_start_offset", "Log start offset of each hosted partition.", tp, nil),
		isrSize:                prometheus.NewDesc("kbroker_partition_isr_size", "ISR size of each partition this broker leads.", tp, nil),
		underReplicated:        prometheus.NewDesc("kbroker_under_replicated_partitions", "Partitions this broker leads whose ISR is smaller than their replica set.", nil, nil),
		leaders:                prometheus.NewDesc("kbroker_leader_partitions", "Partitions this broker leads.", nil, nil),
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
	}
	gauge(c.purgatorySize, float64(n.fetchWaiters.Len()), "fetch")
	if n.replicas != nil {
		under, leading := 0, 0
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
			}
		}
		gauge(c.underReplicated, float64(under))
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
