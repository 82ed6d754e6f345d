package kafkaapi

// DescribeLogDirs (key 35).
//
// Every log directory of this broker, with the partitions it holds (all,
// or those asked for): their size on disk and their offset lag, and the
// future replicas being moved into it by AlterReplicaLogDirs (IsFuture,
// their size so far and, as Kafka's, how far their copy is behind the
// current log's end). The offset lag of a current replica is Kafka's:
// how far the log end offset is below the high watermark, which is 0 for
// a leader and for a follower whose high watermark is the minimum of the
// leader's and its own end. From v4 each directory carries its file
// system's total and usable bytes. A directory that is offline (an I/O
// error took it offline, storage logdir_failure.go), whose file system
// cannot be statted, or which holds a log asked for whose writes failed,
// answers KAFKA_STORAGE_ERROR and no partitions. It needs DESCRIBE on the
// CLUSTER.

import (
	"context"
	"fmt"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
)

func init() {
	register(apiSpec{key: 35, min: 0, max: 4, handle: (*Handlers).handleDescribeLogDirs, actions: server.ClusterAction(kmsg.ACLOperationDescribe)})
}

func (h *Handlers) handleDescribeLogDirs(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
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
	for _, d := range h.logs.LogDirs() {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = d.Path
		if err := h.describeLogDir(&rd, d, wanted); err != nil {
			h.logger.Warn("describe log dir", "dir", d.Path, "err", err)
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
func (h *Handlers) describeLogDir(rd *kmsg.DescribeLogDirsResponseDir, d storage.LogDirLogs, wanted map[replication.TopicPartition]bool) error {
	if d.Offline != nil {
		return fmt.Errorf("offline: %w", d.Offline)
	}
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
		if p, err := h.replicas.Partition(tp); err == nil {
			hw, leo = p.HighWatermark(), p.LogEndOffset()
		}
		rp.OffsetLag = max(hw-leo, 0)
		addLogDirPartition(rd, dl.Topic, rp)
	}
	for _, f := range d.Futures {
		tp := replication.TopicPartition{Topic: f.Topic, Partition: f.Partition}
		if wanted != nil && !wanted[tp] {
			continue
		}
		rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		rp.Partition = f.Partition
		rp.Size = f.Size
		rp.IsFuture = true
		rp.OffsetLag = -1 // Kafka's "not available" without a current replica
		if p, err := h.replicas.Partition(tp); err == nil {
			rp.OffsetLag = max(p.LogEndOffset()-f.EndOffset, 0)
		}
		addLogDirPartition(rd, f.Topic, rp)
	}
	return nil
}

// addLogDirPartition adds rp under topic, keeping the partitions of one
// topic together.
func addLogDirPartition(rd *kmsg.DescribeLogDirsResponseDir, topic string, rp kmsg.DescribeLogDirsResponseDirTopicPartition) {
	for i := range rd.Topics {
		if rd.Topics[i].Topic == topic {
			rd.Topics[i].Partitions = append(rd.Topics[i].Partitions, rp)
			return
		}
	}
	rt := kmsg.NewDescribeLogDirsResponseDirTopic()
	rt.Topic = topic
	rt.Partitions = append(rt.Partitions, rp)
	rd.Topics = append(rd.Topics, rt)
}
