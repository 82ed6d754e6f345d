package kafkaapi

// AlterReplicaLogDirs (key 34).
//
// KIP-113. Moves this broker's replicas of the partitions listed to the log
// directory named for them, while they stay online (replication
// logdir.go, storage move.go): the answer comes once a move is under way,
// and DescribeLogDirs shows the future replica until it replaces the
// current one. Error codes per partition, as Kafka's
// ReplicaManager.alterReplicaLogDirs chooses them:
//
//   - LOG_DIR_NOT_FOUND: the directory is not one of log.dirs;
//   - KAFKA_STORAGE_ERROR: a log directory is offline (Kafka creates no
//     future log then), or the replica is;
//   - REPLICA_NOT_AVAILABLE: this broker does not host the replica (yet);
//     the directory is remembered, and the replica is created there if it
//     comes (Kafka's preferred log dir);
//   - CLUSTER_AUTHORIZATION_FAILED for every partition without ALTER on
//     the CLUSTER.
//
// A replica already in the directory answers NONE and stays. Directories
// are compared as cleaned paths (Kafka compares absolute paths; a relative
// log.dirs entry must be named as configured).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/replication"
)

func init() {
	register(apiSpec{key: 34, min: 0, max: 2, handle: (*Handlers).handleAlterReplicaLogDirs, actions: server.ClusterAction(kmsg.ACLOperationAlter)})
}

func (h *Handlers) handleAlterReplicaLogDirs(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	authorized := rc.AuthorizedCluster(kmsg.ACLOperationAlter)
	// One result per topic, whatever directories its partitions go to,
	// as Kafka groups them (kadm keys its answer by topic).
	topicAt := map[string]int{}
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			i, ok := topicAt[t.Topic]
			if !ok {
				i = len(resp.Topics)
				topicAt[t.Topic] = i
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			rt := &resp.Topics[i]
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				rp.Partition = p
				switch {
				case !authorized:
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				default:
					tp := replication.TopicPartition{Topic: t.Topic, Partition: p}
					if err := h.replicas.AlterReplicaLogDir(tp, d.Dir); err != nil {
						h.logger.Warn("unable to alter log dir of replica", "topic", t.Topic, "partition", p, "dir", d.Dir, "err", err)
						rp.ErrorCode = errcode.Of(err)
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
	}
	return resp, nil
}
