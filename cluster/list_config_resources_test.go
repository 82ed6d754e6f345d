package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// ListConfigResources lists the topics and brokers (v1), no client
// metrics resources (kbroker keeps none), and refuses a type the version
// does not know.
func TestListConfigResources(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "lcr-b", 1, nil)
	createTopic(t, node.addr, "lcr-a", 1, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// kgo sends the highest version both sides know: Kafka 4.0's table
	// pins ListConfigResources at v0.
	cl0, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.MaxVersions(kversion.V4_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl0.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	topic, broker := int8(kmsg.ConfigResourceTypeTopic), int8(kmsg.ConfigResourceTypeBroker)
	for _, tc := range []struct {
		name    string
		version int16
		types   []int8
		want    []string // "type/name"
		code    int16
	}{
		{"v0: client metrics only", 0, nil, nil, 0},
		{"v1: every type", 1, nil, []string{"2/lcr-a", "2/lcr-b", "4/1"}, 0},
		{"v1: brokers", 1, []int8{broker}, []string{"4/1"}, 0},
		{"v1: topics and groups", 1, []int8{topic, int8(kmsg.ConfigResourceTypeGroupConfig)}, []string{"2/lcr-a", "2/lcr-b"}, 0},
		{"v1: unknown type", 1, []int8{99}, nil, kerr.UnsupportedVersion.Code},
	} {
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.Version, req.ResourceTypes = tc.version, tc.types
		c := cl
		if tc.version == 0 {
			c = cl0
		}
		resp, err := req.RequestWith(ctx, c)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, r := range resp.ConfigResources {
			if r.Type == topic && !slices.Contains([]string{"lcr-a", "lcr-b"}, r.Name) {
				continue // internal topics
			}
			got = append(got, fmt.Sprintf("%d/%s", r.Type, r.Name))
		}
		if resp.ErrorCode != tc.code || !slices.Equal(got, tc.want) {
			t.Errorf("%s: code %d, %v; want %d, %v", tc.name, resp.ErrorCode, got, tc.code, tc.want)
		}
	}
}
