package cluster

// DescribeLogDirs (key 35).
//
// Every log directory of this broker, with the partitions it holds (all,
// or those asked for): their size on disk, their offset lag and
// IsFuture false (this broker never moves a replica between its
// directories). The offset lag is Kafka's: how far the log end offset is
// below the high watermark, which is 0 for a leader and for a follower
// whose high watermark is the minimum of the leader's and its own end.
// From v4 each directory carries its file system's total and usable
// bytes. A directory whose file system cannot be statted, or which holds
// a log asked for whose writes failed, answers KAFKA_STORAGE_ERROR and no
// partitions. It needs DESCRIBE on the CLUSTER.

import (
	"context"
	"fmt"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
)

func init() {
	register(apiSpec{key: 35, min: 0, max: 4, handle: (*Node).handleDescribeLogDirs, actions: clusterAction(kmsg.ACLOperationDescribe)})
}

func (n *Node) handleDescribeLogDirs(_ context.Context, rc *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !rc.AuthorizedCluster(kmsg.ACLOperationDescribe) {
		// Kafka answers no directories; v3+ says why.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	// Null topics asks for every partition.
	var wanted map[replication.TopicPartition]bool
	if req.Topics != nil {
		wanted = map[replication.TopicPartition]bool{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				wanted[replication.TopicPartition{Topic: t.Topic, Partition: p}] = true
			}
		}
	}
	for _, d := range n.logs.LogDirs() {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = d.Path
		if err := n.describeLogDir(&rd, d, wanted); err != nil {
			n.logger.Warn("describe log dir", "dir", d.Path, "err", err)
			rd.ErrorCode = kerr.KafkaStorageError.Code
			rd.Topics = nil
			rd.TotalBytes, rd.UsableBytes = -1, -1
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	return resp, nil
}

// describeLogDir fills rd with d's file system sizes and the partitions
// of d in wanted (nil: all), or returns why the directory is unusable.
func (n *Node) describeLogDir(rd *kmsg.DescribeLogDirsResponseDir, d storage.LogDirLogs, wanted map[replication.TopicPartition]bool) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.Path, &st); err != nil {
		return fmt.Errorf("statfs: %w", err)
	}
	bsize := int64(st.Bsize)
	rd.TotalBytes = int64(st.Blocks) * bsize
	rd.UsableBytes = int64(st.Bavail) * bsize
	for _, dl := range d.Logs {
		tp := replication.TopicPartition{Topic: dl.Topic, Partition: dl.Partition}
		if wanted != nil && !wanted[tp] {
			continue
		}
		if err := dl.Log.Failed(); err != nil {
			return fmt.Errorf("%s-%d: %w", dl.Topic, dl.Partition, err)
		}
		rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		rp.Partition = dl.Partition
		rp.Size = dl.Log.Size()
		hw := dl.Log.HighWatermarkCheckpoint()
		leo := dl.Log.LogEndOffset()
		if p, err := n.replicas.Partition(tp); err == nil {
			hw, leo = p.HighWatermark(), p.LogEndOffset()
		}
		rp.OffsetLag = max(hw-leo, 0)
		if i := len(rd.Topics) - 1; i >= 0 && rd.Topics[i].Topic == dl.Topic {
			rd.Topics[i].Partitions = append(rd.Topics[i].Partitions, rp)
			continue
		}
		rt := kmsg.NewDescribeLogDirsResponseDirTopic()
		rt.Topic = dl.Topic
		rt.Partitions = append(rt.Partitions, rp)
		rd.Topics = append(rd.Topics, rt)
	}
	return nil
}
