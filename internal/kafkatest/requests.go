package kafkatest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProduceRequest is a Produce request of version and acks carrying
// parts[p] as partition p's records of topic.
func ProduceRequest(version, acks int16, topic string, parts map[int32][]byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < int32(len(parts)); p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		rp.Records = parts[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// apiVersionsOK checks that c gets an ApiVersions answer.
// APIVersionsOK sends ApiVersions v3 on c and fails the test unless it succeeds.
func APIVersionsOK(t testing.TB, c *Conn) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
	if resp := c.RoundTrip(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions error %d", resp.ErrorCode)
	}
}
