package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// denyingAuthorizer denies every action on the resources in deny and
// allows the rest, counting its calls per API.
type denyingAuthorizer struct {
	deny map[kmsg.ACLResourceType]string

	mu    sync.Mutex
	calls map[int16]int
	seen  []server.Principal
}

func (a *denyingAuthorizer) Authorize(rc *server.RequestContext, actions []server.Action) []bool {
	a.mu.Lock()
	a.calls[rc.Header.APIKey]++
	a.seen = append(a.seen, rc.Principal)
	a.mu.Unlock()
	out := make([]bool, len(actions))
	for i, act := range actions {
		name, ok := a.deny[act.ResourceType]
		out[i] = !ok || name != act.Name
	}
	return out
}

func (a *denyingAuthorizer) callsFor(key int16) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[key]
}

// With an authorizer denying the topic "secret" (and the group
// "secret-group"), Produce, Fetch and Metadata refuse exactly that topic
// with TOPIC_AUTHORIZATION_FAILED and serve the others; every
// transactional id is refused whatever the authorizer says.
func TestAuthorizerDeniesOneTopic(t *testing.T) {
	authz := &denyingAuthorizer{
		deny: map[kmsg.ACLResourceType]string{
			kmsg.ACLResourceTypeTopic:           "secret",
			kmsg.ACLResourceTypeGroup:           "secret-group",
			kmsg.ACLResourceTypeTransactionalId: "tx",
		},
		calls: map[int16]int{},
	}
	node := startNodeWith(t, "", func(n *Node) { n.server.SetAuthorizer(authz) })
	createTopic(t, node.addr, "open", 1, nil)
	createTopic(t, node.addr, "secret", 1, nil)
	c := kafkatest.Dial(t, node.addr)

	t.Run("produce", func(t *testing.T) {
		req := kafkatest.ProduceRequest(9, 1, "open", map[int32][]byte{0: testBatch(t, 3, -1, -1, -1)})
		secret := kafkatest.ProduceRequest(9, 1, "secret", map[int32][]byte{0: testBatch(t, 3, -1, -1, -1)})
		req.Topics = append(req.Topics, secret.Topics...)
		before := authz.callsFor(0)
		resp := c.RoundTrip(req).(*kmsg.ProduceResponse)
		want := map[string]int16{"open": 0, "secret": kerr.TopicAuthorizationFailed.Code}
		for _, rt := range resp.Topics {
			if got := rt.Partitions[0].ErrorCode; got != want[rt.Topic] {
				t.Errorf("produce %s: %v, want %v", rt.Topic, kerr.ErrorForCode(got), kerr.ErrorForCode(want[rt.Topic]))
			}
		}
		// One authorization step for both topics.
		if n := authz.callsFor(0) - before; n != 1 {
			t.Errorf("Produce asked the authorizer %d times, want 1", n)
		}
	})

	t.Run("fetch", func(t *testing.T) {
		req := fetchRequest("open", 0, 0, 0)
		req.Topics = append(req.Topics, fetchRequest("secret", 0, 0, 0).Topics...)
		resp := c.RoundTrip(req).(*kmsg.FetchResponse)
		for _, rt := range resp.Topics {
			p := rt.Partitions[0]
			switch rt.Topic {
			case "open":
				if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
					t.Errorf("fetch open: %v with %d bytes", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
				}
			case "secret":
				if p.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(p.RecordBatches) != 0 {
					t.Errorf("fetch secret: %v with %d bytes, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
				}
			}
		}
		// A fetch waiting for data on the open topic is not answered at
		// once because the secret one was refused.
		start := time.Now()
		req = fetchRequest("open", 3, 1, 300)
		req.Topics = append(req.Topics, fetchRequest("secret", 0, 1, 300).Topics...)
		c.RoundTrip(req)
		if waited := time.Since(start); waited < 300*time.Millisecond {
			t.Errorf("fetch with a refused topic answered after %v, before MaxWaitMillis", waited)
		}
	})

	t.Run("metadata", func(t *testing.T) {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		for _, name := range []string{"open", "secret", "secret-new"} {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, rt)
		}
		req.AllowAutoTopicCreation = true
		resp := c.RoundTrip(req).(*kmsg.MetadataResponse)
		want := map[string]int16{"open": 0, "secret": kerr.TopicAuthorizationFailed.Code, "secret-new": kerr.UnknownTopicOrPartition.Code}
		// secret-new is DESCRIBE-able and gets auto-created; as in Kafka,
		// the request that creates it is told UNKNOWN_TOPIC_OR_PARTITION.
		for _, rt := range resp.Topics {
			if got := rt.ErrorCode; got != want[*rt.Topic] {
				t.Errorf("metadata %s: %v, want %v", *rt.Topic, kerr.ErrorForCode(got), kerr.ErrorForCode(want[*rt.Topic]))
			}
			if *rt.Topic == "secret" && len(rt.Partitions) != 0 {
				t.Errorf("metadata described %d partitions of the refused topic", len(rt.Partitions))
			}
		}
		all := kmsg.NewPtrMetadataRequest()
		all.Version = 12
		listed := map[string]bool{}
		for _, rt := range c.RoundTrip(all).(*kmsg.MetadataResponse).Topics {
			listed[*rt.Topic] = true
		}
		if !listed["open"] || listed["secret"] {
			t.Errorf("all-topics metadata lists %v: want open and not secret", listed)
		}
	})

	t.Run("coordinators and transactions", func(t *testing.T) {
		for _, tc := range []struct {
			keyType int8
			key     string
			want    int16
		}{
			{1, "tx", kerr.TransactionalIDAuthorizationFailed.Code},
			{0, "secret-group", kerr.GroupAuthorizationFailed.Code},
		} {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.Version = 4
			req.CoordinatorType = tc.keyType
			req.CoordinatorKeys = []string{tc.key}
			resp := c.RoundTrip(req).(*kmsg.FindCoordinatorResponse)
			if got := resp.Coordinators[0].ErrorCode; got != tc.want {
				t.Errorf("FindCoordinator %d/%s: %v, want %v", tc.keyType, tc.key, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
			}
		}
		init := kmsg.NewPtrInitProducerIDRequest()
		init.Version = 4
		init.TransactionalID = kmsg.StringPtr("tx")
		init.TransactionTimeoutMillis = 60000
		if got := c.RoundTrip(init).(*kmsg.InitProducerIDResponse).ErrorCode; got != kerr.TransactionalIDAuthorizationFailed.Code {
			t.Errorf("InitProducerId with a transactional id: %v", kerr.ErrorForCode(got))
		}
		tx := kafkatest.ProduceRequest(9, -1, "open", map[int32][]byte{0: testBatch(t, 1, -1, -1, -1)})
		tx.TransactionID = kmsg.StringPtr("tx")
		for _, code := range partitionErrors(c.RoundTrip(tx).(*kmsg.ProduceResponse)) {
			if code != kerr.TransactionalIDAuthorizationFailed.Code {
				t.Errorf("transactional produce: %v", kerr.ErrorForCode(code))
			}
		}
	})

	t.Run("franz-go client", func(t *testing.T) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.RecordDeliveryTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "open", Value: []byte("v")}).FirstErr(); err != nil {
			t.Errorf("produce to open: %v", err)
		}
		err = cl.ProduceSync(ctx, &kgo.Record{Topic: "secret", Value: []byte("v")}).FirstErr()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("produce to secret: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
	})

	authz.mu.Lock()
	defer authz.mu.Unlock()
	for _, p := range authz.seen {
		if p.String() != "User:ANONYMOUS" {
			t.Fatalf("principal %v, want User:ANONYMOUS", p)
		}
	}
}
