package config

import (
	"math"
	"strconv"
)

// Replication throttles (Kafka's ReplicationQuotaManager): the rates are
// broker keys that can also be changed at runtime cluster-wide (the
// broker resource with an empty name), which is how operators set them
// for the time of a reassignment; the throttled replicas are the topic
// keys leader/follower.replication.throttled.replicas.

const (
	LeaderReplicationThrottledRate   = "leader.replication.throttled.rate"
	FollowerReplicationThrottledRate = "follower.replication.throttled.rate"
)

var replicationQuotaKeys = []brokerKey{
	intKey(LeaderReplicationThrottledRate, strconv.FormatInt(math.MaxInt64, 10),
		"Bytes per second a leader sends to followers of the replicas listed in leader.replication.throttled.replicas, across them (followers in the ISR are served regardless). Dynamic cluster-wide.", 1,
		func(c *Config) *int64 { return &c.LeaderReplicationThrottledRate }),
	intKey(FollowerReplicationThrottledRate, strconv.FormatInt(math.MaxInt64, 10),
		"Bytes per second a follower fetches for the replicas listed in follower.replication.throttled.replicas, across them (a caught-up replica is fetched regardless). Dynamic cluster-wide.", 1,
		func(c *Config) *int64 { return &c.FollowerReplicationThrottledRate }),
	intKey("replication.quota.window.num", "11", "Samples the replication throttle rates are measured over.", 1,
		func(c *Config) *int32 { return &c.ReplicationQuotaWindowNum }),
	intKey("replication.quota.window.size.seconds", "1", "Length of one replication throttle sample, in seconds.", 1,
		func(c *Config) *int32 { return &c.ReplicationQuotaWindowSizeSeconds }),
}

// dynamicBrokerKeys are the broker keys not behind a topic key that
// ValidateClusterConfigs accepts as cluster-wide dynamic values: the
// replication throttle rates and the log cleaner's keys
// (cleaner_dynamic.go).
var dynamicBrokerKeys = map[string]bool{
	LeaderReplicationThrottledRate:        true,
	FollowerReplicationThrottledRate:      true,
	"log.cleaner.threads":                 true,
	"log.cleaner.dedupe.buffer.size":      true,
	"log.cleaner.io.max.bytes.per.second": true,
	"log.cleaner.backoff.ms":              true,
}

// checkDynamicBrokerKey checks a cluster-wide value of a dynamic broker
// key as the key's parser and range check would at start.
func checkDynamicBrokerKey(name, v string) error {
	k := keyIndex[name]
	var b builder
	if err := k.parse(&b, v); err != nil {
		return err
	}
	if k.check != nil {
		return k.check(&b.Config)
	}
	return nil
}

// ReplicationThrottledRates are the leader and follower replication
// throttle rates in effect: the cluster-wide dynamic value when set and
// valid, else this broker's static one.
func (c *Config) ReplicationThrottledRates(cluster map[string]string) (leader, follower int64) {
	leader, follower = c.LeaderReplicationThrottledRate, c.FollowerReplicationThrottledRate
	if v, ok := cluster[LeaderReplicationThrottledRate]; ok && checkDynamicBrokerKey(LeaderReplicationThrottledRate, v) == nil {
		leader, _ = strconv.ParseInt(v, 10, 64)
	}
	if v, ok := cluster[FollowerReplicationThrottledRate]; ok && checkDynamicBrokerKey(FollowerReplicationThrottledRate, v) == nil {
		follower, _ = strconv.ParseInt(v, 10, 64)
	}
	return leader, follower
}
