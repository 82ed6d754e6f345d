package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestAPIsAuthorize: every API answers a principal without ACLs with
// Kafka's *_AUTHORIZATION_FAILED, and serves one with ACLs on the topic
// and the group (ALL). Cases run in order; the deletions come last.
func TestAPIsAuthorize(t *testing.T) {
	node := startNodeWith(t, "", principalsByClientID, aclSets...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := clientAs(t, node.addr, "admin")
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := commitOffset(ctx, admin, "g", "t"); err != nil {
		t.Fatal(err)
	}
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:carol").Topics("t").Operations(kadm.OpAll),
		kadm.NewACLs().Allow("User:carol").Groups("g").Operations(kadm.OpAll),
	} {
		if res, err := adm.CreateACLs(ctx, b); err != nil || res[0].Err != nil {
			t.Fatalf("create acls: %v %+v", err, res)
		}
	}
	nobody, carol := clientAs(t, node.addr, "nobody"), clientAs(t, node.addr, "carol")

	topicPartition := func() (string, int32) { return "t", 0 }
	for _, tc := range []struct {
		name         string
		req          func() kmsg.Request
		code         func(kmsg.Response) int16
		nobody, user *kerr.Error
	}{
		{"ListOffsets", func() kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic, _ = topicPartition()
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = -1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode },
			kerr.TopicAuthorizationFailed, nil},
		{"DescribeProducers", func() kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			rt := kmsg.NewDescribeProducersRequestTopic()
			rt.Topic, rt.Partitions = "t", []int32{0}
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 {
			return r.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode
		}, kerr.TopicAuthorizationFailed, nil},
		{"OffsetForLeaderEpoch", func() kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.CurrentLeaderEpoch = -1
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 {
			return r.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode
		}, kerr.TopicAuthorizationFailed, nil},
		{"DescribeConfigs topic", func() kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			r.Resources = append(r.Resources, rr)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode },
			kerr.TopicAuthorizationFailed, nil},
		{"DescribeConfigs broker", func() kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
			r.Resources = append(r.Resources, rr)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode },
			kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed},
		{"IncrementalAlterConfigs", func() kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r.ValidateOnly = true
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("1000")
			rr.Configs = append(rr.Configs, c)
			r.Resources = append(r.Resources, rr)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode },
			kerr.TopicAuthorizationFailed, nil},
		{"AlterConfigs", func() kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			r.ValidateOnly = true
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", kmsg.StringPtr("1000")
			rr.Configs = append(rr.Configs, c)
			r.Resources = append(r.Resources, rr)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode },
			kerr.TopicAuthorizationFailed, nil},
		{"AlterConfigs broker", func() kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			r.ValidateOnly = true
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType = kmsg.ConfigResourceTypeBroker
			r.Resources = append(r.Resources, rr)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode },
			kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed},
		{"IncrementalAlterConfigs this broker", func() kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r.ValidateOnly = true
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "log.retention.ms", kmsg.StringPtr("1000")
			rr.Configs = append(rr.Configs, c)
			r.Resources = append(r.Resources, rr)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode },
			kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed},
		{"UnregisterBroker", func() kmsg.Request {
			r := kmsg.NewPtrUnregisterBrokerRequest()
			r.BrokerID = 9 // authorized, this would be BROKER_ID_NOT_REGISTERED
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.UnregisterBrokerResponse).ErrorCode },
			kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed},
		{"DescribeQuorum", func() kmsg.Request {
			r := kmsg.NewPtrDescribeQuorumRequest()
			rt := kmsg.NewDescribeQuorumRequestTopic()
			rt.Topic = "__cluster_metadata"
			rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeQuorumResponse).ErrorCode },
			kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed},
		{"AddRaftVoter", func() kmsg.Request {
			r := kmsg.NewPtrAddRaftVoterRequest()
			r.VoterID = 1 // authorized, this would be DUPLICATE_VOTER
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.AddRaftVoterResponse).ErrorCode },
			kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed},
		{"RemoveRaftVoter", func() kmsg.Request {
			r := kmsg.NewPtrRemoveRaftVoterRequest()
			r.VoterID = 9 // authorized, this would be VOTER_NOT_FOUND
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.RemoveRaftVoterResponse).ErrorCode },
			kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed},
		{"DescribeTopicPartitions", func() kmsg.Request {
			r := kmsg.NewPtrDescribeTopicPartitionsRequest()
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = "t"
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeTopicPartitionsResponse).Topics[0].ErrorCode },
			kerr.TopicAuthorizationFailed, nil},
		{"CreatePartitions", func() kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			r.ValidateOnly, r.TimeoutMillis = true, 5000
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = "t", 2
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode },
			kerr.TopicAuthorizationFailed, nil},
		{"CreateTopics", func() kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			r.TimeoutMillis = 5000
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "t2", 1, 1
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode },
			kerr.TopicAuthorizationFailed, kerr.TopicAuthorizationFailed},
		{"InitProducerId", func() kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionTimeoutMillis = -1
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode },
			kerr.ClusterAuthorizationFailed, nil},
		{"DescribeGroups", func() kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{"g"}
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode },
			kerr.GroupAuthorizationFailed, nil},
		{"OffsetFetch", func() kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = "g"
			r.Groups = append(r.Groups, rg)
			return r
		}, func(r kmsg.Response) int16 {
			return r.(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode
		}, kerr.GroupAuthorizationFailed, nil},
		{"Heartbeat", func() kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group, r.MemberID, r.Generation = "g", "m", 1
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode },
			kerr.GroupAuthorizationFailed, kerr.UnknownMemberID},
		{"OffsetDelete", func() kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = "g"
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = "t"
			rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.OffsetDeleteResponse).ErrorCode },
			kerr.GroupAuthorizationFailed, nil},
		{"DeleteRecords", func() kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			r.TimeoutMillis = 5000
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewDeleteRecordsRequestTopicPartition()
			rp.Offset = 0
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode },
			kerr.TopicAuthorizationFailed, nil},
		{"DeleteGroups", func() kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{"g"}
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode },
			kerr.GroupAuthorizationFailed, nil},
		{"DeleteTopics", func() kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.TimeoutMillis = 5000
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = kmsg.StringPtr("t")
			r.Topics = append(r.Topics, rt)
			r.TopicNames = []string{"t"}
			return r
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode },
			kerr.TopicAuthorizationFailed, nil},
	} {
		for _, who := range []struct {
			name string
			cl   *kgo.Client
			want *kerr.Error
		}{{"nobody", nobody, tc.nobody}, {"carol", carol, tc.user}} {
			resp, err := who.cl.Broker(1).Request(ctx, tc.req())
			if err != nil {
				t.Fatalf("%s as %s: %v", tc.name, who.name, err)
			}
			if got := kerr.ErrorForCode(tc.code(resp)); got != who.want && (who.want != nil || got != nil) {
				t.Errorf("%s as %s: %v, want %v", tc.name, who.name, got, who.want)
			}
		}
		if tc.name == "OffsetDelete" {
			// ListGroups before the group is deleted: carol sees g,
			// nobody sees nothing.
			for _, who := range []struct {
				cl   *kgo.Client
				want int
			}{{nobody, 0}, {carol, 1}} {
				resp, err := who.cl.Broker(1).Request(ctx, kmsg.NewPtrListGroupsRequest())
				if err != nil {
					t.Fatal(err)
				}
				if n := len(resp.(*kmsg.ListGroupsResponse).Groups); n != who.want {
					t.Errorf("ListGroups lists %d groups, want %d", n, who.want)
				}
			}
		}
	}
}

// TestAuthorizedOperations: Metadata (topic and cluster) and
// DescribeGroups compute Kafka's authorized-operations bit fields when
// asked: bit op for each operation the principal may do.
func TestAuthorizedOperations(t *testing.T) {
	node := startNodeWith(t, "", principalsByClientID, aclSets...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(clientAs(t, node.addr, "admin"))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:carol").Topics("t").Operations(kadm.OpRead, kadm.OpAlterConfigs),
		kadm.NewACLs().Allow("User:carol").Groups("g").Operations(kadm.OpDelete),
		kadm.NewACLs().Allow("User:carol").Clusters().Operations(kadm.OpDescribe),
	} {
		if res, err := adm.CreateACLs(ctx, b); err != nil || res[0].Err != nil {
			t.Fatalf("create acls: %v %+v", err, res)
		}
	}
	// Metadata v10 is the last to carry the cluster's operations: pin
	// the client's versions to Kafka 2.7's.
	carol := clientAs(t, node.addr, "carol", kgo.MaxVersions(kversion.V2_7_0()))
	bits := func(ops ...kmsg.ACLOperation) int32 {
		var b int32
		for _, op := range ops {
			b |= 1 << op
		}
		return b
	}
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 10
	req.IncludeClusterAuthorizedOperations, req.IncludeTopicAuthorizedOperations = true, true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("t")
	req.Topics = append(req.Topics, rt)
	resp, err := carol.Broker(1).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	mr := resp.(*kmsg.MetadataResponse)
	// READ implies DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS.
	wantTopic := bits(kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationDescribeConfigs)
	if got := mr.Topics[0].AuthorizedOperations; got != wantTopic {
		t.Errorf("topic operations %b, want %b", got, wantTopic)
	}
	if got, want := mr.AuthorizedOperations, bits(kmsg.ACLOperationDescribe); got != want {
		t.Errorf("cluster operations %b, want %b", got, want)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups, dg.IncludeAuthorizedOperations = []string{"g"}, true
	dresp, err := carol.Broker(1).Request(ctx, dg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dresp.(*kmsg.DescribeGroupsResponse).Groups[0].AuthorizedOperations,
		bits(kmsg.ACLOperationDelete, kmsg.ACLOperationDescribe); got != want {
		t.Errorf("group operations %b, want %b", got, want)
	}
}
