package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// kafka4Minimums makes a franz-go client refuse to send the data-path
// requests below Kafka 4.0's versions, so everything it does below runs
// at those versions or not at all.
func kafka4Minimums() *kversion.Versions {
	var v kversion.Versions
	for key, min := range map[int16]int16{0: 12, 1: 17, 2: 10, 3: 13, 22: 5} {
		v.SetMaxKeyVersion(key, min)
	}
	return &v
}

// A franz-go client held at Kafka 4.0's versions produces (Produce 12,
// InitProducerId 5), consumes (Fetch 17, by topic id), looks up offsets
// (ListOffsets 10, with the -3, -4 and -5 lookups) and guesses Kafka 4.0
// (or 4.1, which kbroker's table also matches).
func TestFranzAtKafka4Versions(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "v4", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.MinVersions(kafka4Minimums()),
		kgo.DefaultProduceTopic("v4"), kgo.ConsumeTopics("v4"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// Timestamps rise but for record 6, the newest: -3 must find it.
	const n = 10
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := range n {
		ts := base.Add(time.Duration(i) * time.Second)
		if i == 6 {
			ts = base.Add(time.Minute)
		}
		r := &kgo.Record{Value: []byte(fmt.Sprintf("v%d", i)), Timestamp: ts}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", len(got), n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		if v != fmt.Sprintf("v%d", i) {
			t.Fatalf("record %d is %q", i, v)
		}
	}

	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteRecords(ctx, kadm.Offsets{"v4": {0: {Topic: "v4", Partition: 0, At: 2}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		timestamp     int64
		offset, ts    int64
		epochUnknown  bool
		wantErrorCode int16
	}{
		{timestamp: -1, offset: n, ts: -1},
		{timestamp: -2, offset: 2, ts: -1},
		{timestamp: -3, offset: 6, ts: base.Add(time.Minute).UnixMilli()},
		{timestamp: -4, offset: 2, ts: -1},
		{timestamp: -5, offset: -1, ts: -1, epochUnknown: true},
		{timestamp: -6, wantErrorCode: kerr.UnsupportedVersion.Code},
		{timestamp: base.Add(3 * time.Second).UnixMilli(), offset: 3, ts: base.Add(3 * time.Second).UnixMilli()},
	} {
		t.Run(fmt.Sprint(tc.timestamp), func(t *testing.T) {
			p := listOffsetsAt(ctx, t, cl, "v4", tc.timestamp)
			if p.ErrorCode != tc.wantErrorCode {
				t.Fatalf("error %v, want %v", kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(tc.wantErrorCode))
			}
			if tc.wantErrorCode != 0 {
				return
			}
			if p.Offset != tc.offset || p.Timestamp != tc.ts || tc.epochUnknown != (p.LeaderEpoch == -1) {
				t.Fatalf("offset %d timestamp %d epoch %d, want offset %d timestamp %d (unknown epoch %v)", p.Offset, p.Timestamp, p.LeaderEpoch, tc.offset, tc.ts, tc.epochUnknown)
			}
		})
	}

	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	versions.Each(func(b kadm.BrokerApiVersions) {
		if b.Err != nil {
			t.Fatalf("ApiVersions of %d: %v", b.NodeID, b.Err)
		}
		// A PLAINTEXT listener does not list the SASL APIs
		// (conn_auth.go), which Kafka lists on every listener.
		// Keys served at another maximum than Kafka 4.0 (beyond it, below it,
		// or not at all) are left out; kafkaapi's TestApiVersionsGuessKafka4
		// checks each of those against its allow-list.
		skip := []int16{kmsg.SASLHandshake.Int16(), kmsg.SASLAuthenticate.Int16()}
		kafka4 := kversion.V4_0_0()
		kafka4.EachMaxKeyVersion(func(key, max int16) {
			if got, ok := b.KeyMaxVersion(key); !ok || got != max {
				skip = append(skip, key)
			}
		})
		b.EachKeySorted(func(key, _, _ int16) {
			if _, ok := kafka4.LookupMaxKeyVersion(key); !ok {
				skip = append(skip, key)
			}
		})
		// The keys left are at Kafka 4.0's maximum; where 4.1 serves
		// them at the same versions the guess is the newer release.
		if guess := b.VersionGuess(kversion.SkipKeys(skip...)); guess != "v4.0" && guess != "v4.1" {
			t.Errorf("broker %d: kadm guesses %q, want v4.0 or v4.1", b.NodeID, guess)
		}
	})
}

// listOffsetsAt asks partition 0 of topic for the offset at timestamp.
func listOffsetsAt(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, timestamp int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != 10 {
		t.Fatalf("ListOffsets went out at v%d, want v10", resp.Version)
	}
	return resp.Topics[0].Partitions[0]
}

// The tiered-storage lookups need the versions that introduced them.
func TestListOffsetsSpecialTimestampVersions(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "lo", 1, nil)
	c := kafkatest.Dial(t, node.addr)
	for _, tc := range []struct {
		version   int16
		timestamp int64
		want      int16
	}{
		{6, -3, kerr.UnsupportedVersion.Code},
		{7, -3, 0},
		{7, -4, kerr.UnsupportedVersion.Code},
		{8, -4, 0},
		{8, -5, kerr.UnsupportedVersion.Code},
		{9, -5, 0},
		{10, -6, kerr.UnsupportedVersion.Code},
	} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = tc.version
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "lo"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = tc.timestamp
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := c.RoundTrip(req).(*kmsg.ListOffsetsResponse)
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != tc.want {
			t.Errorf("v%d timestamp %d: %v, want %v", tc.version, tc.timestamp, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
}

// From Fetch v13 and Produce v13 topics are named by id: a known id reads
// or writes its partitions, an unknown one gets UNKNOWN_TOPIC_ID.
func TestFetchAndProduceByTopicID(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "byid", 1, nil)
	produceAll(t, node.addr, "byid", 5)
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx, "byid")
	if err != nil {
		t.Fatal(err)
	}
	id := topics["byid"].ID
	unknown := id
	unknown[0] ^= 0xff

	c := kafkatest.Dial(t, node.addr)
	produce := kafkatest.ProduceRequest(13, 1, "", map[int32][]byte{0: testBatch(t, 2, -1, -1, -1)})
	produce.Topics[0].TopicID = id
	other := produce.Topics[0]
	other.TopicID = unknown
	produce.Topics = append(produce.Topics, other)
	presp := c.RoundTrip(produce).(*kmsg.ProduceResponse)
	if len(presp.Topics) != 2 || presp.Topics[0].TopicID != id || presp.Topics[1].TopicID != unknown {
		t.Fatalf("produce v13: response topics %+v", presp.Topics)
	}
	if p := presp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 5 {
		t.Errorf("produce v13 by known id: error %v base offset %d, want 5", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
	if code := presp.Topics[1].Partitions[0].ErrorCode; code != kerr.UnknownTopicID.Code {
		t.Errorf("produce v13 by unknown id: %v, want UNKNOWN_TOPIC_ID", kerr.ErrorForCode(code))
	}
	for _, version := range []int16{13, 15, 16, 17, 18} {
		req := kmsg.NewPtrFetchRequest()
		req.Version = version
		req.ReplicaID = -1
		req.ReplicaState.ID = -1
		req.MaxBytes = 1 << 20
		for _, tid := range [][16]byte{id, unknown} {
			rt := kmsg.NewFetchRequestTopic()
			rt.TopicID = tid
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp := c.RoundTrip(req).(*kmsg.FetchResponse)
		if len(resp.Topics) != 2 {
			t.Fatalf("v%d: %d topics in the response, want 2", version, len(resp.Topics))
		}
		known, missing := resp.Topics[0], resp.Topics[1]
		if known.TopicID != id || known.Partitions[0].ErrorCode != 0 || known.Partitions[0].HighWatermark != 7 || len(known.Partitions[0].RecordBatches) == 0 {
			t.Errorf("v%d: known id: %+v", version, known.Partitions[0])
		}
		if missing.TopicID != unknown || missing.Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
			t.Errorf("v%d: unknown id: error %v, want UNKNOWN_TOPIC_ID", version, kerr.ErrorForCode(missing.Partitions[0].ErrorCode))
		}
	}
}

// DescribeTopicPartitions pages through every partition in topic order,
// ResponsePartitionLimit at a time, and refuses a cursor outside the
// requested topics.
func TestDescribeTopicPartitionsPages(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "pa", 5, nil)
	createTopic(t, node.addr, "pb", 3, nil)
	createTopic(t, node.addr, "pc", 1, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	describe := func(limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
		t.Helper()
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit = limit
		req.Cursor = cursor
		for _, name := range topics {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = name
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	for _, tc := range []struct {
		name   string
		limit  int32
		topics []string
		pages  []int // partitions per page
		want   []string
	}{
		{"all topics by 3", 3, nil, []int{3, 3, 3}, []string{"pa/0", "pa/1", "pa/2", "pa/3", "pa/4", "pb/0", "pb/1", "pb/2", "pc/0"}},
		{"named topics by 5", 5, []string{"pb", "pa", "nope"}, []int{5, 3}, []string{"pa/0", "pa/1", "pa/2", "pa/3", "pa/4", "pb/0", "pb/1", "pb/2"}},
		{"one page", 2000, []string{"pc", "pb"}, []int{4}, []string{"pb/0", "pb/1", "pb/2", "pc/0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			var pages []int
			var cursor *kmsg.DescribeTopicPartitionsRequestCursor
			unknownSeen := false
			for page := 0; ; page++ {
				if page > 10 {
					t.Fatal("more than 10 pages")
				}
				resp := describe(tc.limit, cursor, tc.topics...)
				count := 0
				for _, rt := range resp.Topics {
					if rt.ErrorCode == kerr.UnknownTopicOrPartition.Code && *rt.Topic == "nope" {
						unknownSeen = true
						continue
					}
					if rt.ErrorCode != 0 {
						t.Fatalf("topic %s: %v", *rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
					}
					for _, p := range rt.Partitions {
						if p.LeaderID != 1 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
							t.Errorf("%s/%d: leader %d replicas %v isr %v", *rt.Topic, p.Partition, p.LeaderID, p.Replicas, p.ISR)
						}
						got = append(got, fmt.Sprintf("%s/%d", *rt.Topic, p.Partition))
						count++
					}
				}
				pages = append(pages, count)
				if resp.NextCursor == nil {
					break
				}
				cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || fmt.Sprint(pages) != fmt.Sprint(tc.pages) {
				t.Errorf("pages %v of %v, want pages %v of %v", pages, got, tc.pages, tc.want)
			}
			if len(tc.topics) == 3 && !unknownSeen {
				t.Error("the unknown topic was not reported")
			}
		})
	}

	resp := describe(10, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "pc"}, "pa", "pb")
	for _, rt := range resp.Topics {
		if rt.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("cursor outside the topics: %s gets %v, want INVALID_REQUEST", *rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
		}
	}
}

// The legacy AlterConfigs replaces a resource's dynamic configs as a
// whole: what it does not name goes back to the default.
func TestAlterConfigsReplaces(t *testing.T) {
	node := startNode(t, "")
	createTopic(t, node.addr, "ac", 1, map[string]*string{"retention.ms": kmsg.StringPtr("60000")})
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(cl)

	alter := func(validateOnly bool, typ kmsg.ConfigResourceType, name string, kv ...string) *kmsg.AlterConfigsResponseResource {
		t.Helper()
		req := kmsg.NewPtrAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		for i := 0; i < len(kv); i += 2 {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return &resp.Resources[0]
	}
	dynamic := func() map[string]string {
		t.Helper()
		rcs, err := adm.DescribeTopicConfigs(ctx, "ac")
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On("ac", nil)
		if err != nil || rc.Err != nil {
			t.Fatalf("describe: %v %v", err, rc.Err)
		}
		out := map[string]string{}
		for _, c := range rc.Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				out[c.Key] = c.MaybeValue()
			}
		}
		return out
	}

	if r := alter(false, kmsg.ConfigResourceTypeTopic, "ac", "segment.bytes", "1048576", "cleanup.policy", "compact"); r.ErrorCode != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if got := dynamic(); fmt.Sprint(got) != fmt.Sprint(map[string]string{"cleanup.policy": "compact", "segment.bytes": "1048576"}) {
		t.Fatalf("dynamic configs after replace: %v (retention.ms should be gone)", got)
	}
	for _, tc := range []struct {
		name string
		r    *kmsg.AlterConfigsResponseResource
		want int16
	}{
		{"invalid value", alter(false, kmsg.ConfigResourceTypeTopic, "ac", "retention.ms", "soon"), kerr.InvalidConfig.Code},
		{"unknown topic", alter(false, kmsg.ConfigResourceTypeTopic, "nope", "retention.ms", "1"), kerr.UnknownTopicOrPartition.Code},
		{"validate only", alter(true, kmsg.ConfigResourceTypeTopic, "ac"), 0},
		{"per-broker", alter(true, kmsg.ConfigResourceTypeBroker, "1", "log.retention.ms", "1000"), 0},
		{"cluster default", alter(true, kmsg.ConfigResourceTypeBroker, "", "log.retention.ms", "1000"), 0},
	} {
		if tc.r.ErrorCode != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(tc.r.ErrorCode), kerr.ErrorForCode(tc.want))
		}
	}
	// Neither the refused nor the validate-only requests changed anything.
	if got := dynamic(); len(got) != 2 {
		t.Fatalf("dynamic configs changed by refused or validate-only requests: %v", got)
	}
}

// DescribeCluster v2 tells fenced brokers apart when asked to include
// them; the live ones are not fenced.
func TestDescribeClusterV2(t *testing.T) {
	node := startNode(t, "")
	c := kafkatest.Dial(t, node.addr)
	for _, include := range []bool{false, true} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = 2
		req.EndpointType = 1
		req.IncludeFencedBrokers = include
		resp := c.RoundTrip(req).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 || len(resp.Brokers) != 1 || resp.Brokers[0].IsFenced {
			t.Fatalf("include fenced %v: error %v brokers %+v", include, kerr.ErrorForCode(resp.ErrorCode), resp.Brokers)
		}
	}
}
