package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"
)

// metadataFor asks for topics at version v, allowing auto-creation when
// allow (versions below 4 always allow it).
func metadataFor(c *kafkatest.Conn, v int16, allow bool, topics ...string) map[string]kmsg.MetadataResponseTopic {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = v
	req.AllowAutoTopicCreation = allow
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	out := map[string]kmsg.MetadataResponseTopic{}
	for _, rt := range c.RoundTrip(req).(*kmsg.MetadataResponse).Topics {
		out[*rt.Topic] = rt
	}
	return out
}

// TestMetadataAutoCreateAnswer checks Kafka's answer to a Metadata
// request that auto-creates a topic (KafkaApis.getTopicMetadata and
// AutoTopicCreationManager.createTopics): the request that causes the
// creation is told UNKNOWN_TOPIC_OR_PARTITION with no partitions, and
// only a later request describes the new topic. A topic just deleted
// is therefore not described again with partitions by the Metadata
// request that re-creates it (kafka-go's TestConn/test_delete_topics).
func TestMetadataAutoCreateAnswer(t *testing.T) {
	node := startNode(t, "", "num.partitions=2")
	c := kafkatest.Dial(t, node.addr)

	for _, v := range []int16{1, 6, 12} {
		name := fmt.Sprintf("auto-v%d", v)
		first := metadataFor(c, v, true, name)[name]
		if first.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(first.Partitions) != 0 {
			t.Errorf("v%d: first answer for an auto-created topic: %v with %d partitions, want UNKNOWN_TOPIC_OR_PARTITION with none",
				v, kerr.ErrorForCode(first.ErrorCode), len(first.Partitions))
		}
		testutil.Eventually(t, 10*time.Second, func() error {
			rt := metadataFor(c, v, false, name)[name]
			if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
				return err
			}
			if len(rt.Partitions) != 2 {
				return fmt.Errorf("%d partitions, want 2", len(rt.Partitions))
			}
			return nil
		}, "the auto-created topic described")
	}

	// Not allowed by the request: not created, and unknown.
	if rt := metadataFor(c, 12, false, "never")["never"]; rt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("without allow_auto_topic_creation: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(rt.ErrorCode))
	}
	if rt := metadataFor(c, 12, false, "never")["never"]; rt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("a topic the request did not allow to be created exists: %v", kerr.ErrorForCode(rt.ErrorCode))
	}

	// Deleted, then asked for with auto-creation allowed: the answer has
	// no partitions (the topic deleted is gone; the one created in its
	// place is not described yet).
	createTopic(t, node.addr, "gone", 1, nil)
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 1
	del.TopicNames = []string{"gone"}
	del.TimeoutMillis = 5000
	if resp := c.RoundTrip(del).(*kmsg.DeleteTopicsResponse); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	if rt := metadataFor(c, 6, true, "gone")["gone"]; len(rt.Partitions) != 0 {
		t.Errorf("metadata right after DeleteTopics describes %d partitions (%v), want none", len(rt.Partitions), kerr.ErrorForCode(rt.ErrorCode))
	}
}

// TestMetadataAutoCreateDisabled: with auto.create.topics.enable=false a
// request allowing auto-creation creates nothing (Kafka creates a topic
// only when both allow it).
func TestMetadataAutoCreateDisabled(t *testing.T) {
	node := startNode(t, "", "auto.create.topics.enable=false")
	c := kafkatest.Dial(t, node.addr)
	for range 2 {
		if rt := metadataFor(c, 12, true, "nope")["nope"]; rt.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(rt.Partitions) != 0 {
			t.Errorf("auto-creation disabled: %v with %d partitions, want UNKNOWN_TOPIC_OR_PARTITION with none",
				kerr.ErrorForCode(rt.ErrorCode), len(rt.Partitions))
		}
	}
}
