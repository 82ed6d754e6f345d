package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/security/sasl"
)

// aclSets turns on the StandardAuthorizer with User:admin as super user.
var aclSets = []string{
	"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"super.users=User:admin",
}

// principalsByClientID is the test hook that names principals without
// SASL: a client id "as-NAME" acts as User:NAME; any other connection
// keeps its own principal (User:ANONYMOUS on PLAINTEXT).
func principalsByClientID(n *Node) {
	a := n.server.Authorizer().(*aclAuthorizer)
	a.principalOf = func(rc *server.RequestContext) server.Principal {
		if id, ok := strings.CutPrefix(clientID(rc), "as-"); ok {
			return server.Principal{Type: "User", Name: id}
		}
		return rc.Principal
	}
}

func clientAs(t *testing.T, addr, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("as-" + user),
		kgo.RecordDeliveryTimeout(10 * time.Second), kgo.RequestRetries(2)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// commitOffset commits offset 1 of partition 0 of topic for group, as a
// simple consumer, and returns the partition's error.
func commitOffset(ctx context.Context, cl *kgo.Client, group, topic string) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// By topic name: OffsetCommit v9 at most (v10 names topics by id).
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.OffsetCommit), 9)
	named, err := kgo.NewClient(append(cl.Opts(), kgo.MaxVersions(v))...)
	if err != nil {
		return err
	}
	defer named.Close()
	resp, err := req.RequestWith(ctx, named)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

func fetchError(ctx context.Context, t *testing.T, cl *kgo.Client, adm *kadm.Client, topic string) error {
	t.Helper()
	// cl negotiates Fetch v13+, which names topics by id only: adm,
	// which may describe every topic, looks the id up.
	topics, err := adm.ListTopics(ctx, topic)
	if err != nil || topics[topic].Err != nil {
		t.Fatalf("looking up the id of %s: %v %v", topic, err, topics[topic].Err)
	}
	req := fetchRequest(topic, 0, 0, 0)
	req.Topics[0].TopicID = topics[topic].ID
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

func describeAllACLs(ctx context.Context, t *testing.T, adm *kadm.Client) int {
	t.Helper()
	res, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("describe acls: %v", r.Err)
		}
		n += len(r.Described)
	}
	return n
}

// TestACLsWithFranzGo: a user allowed on a prefix produces, consumes and
// commits inside it, gets Kafka's *_AUTHORIZATION_FAILED outside, sees
// only its topics in Metadata, is stopped by a DENY, and the ACLs and
// SCRAM users survive a restart.
func TestACLsWithFranzGo(t *testing.T) {
	node := startNodeWith(t, "", principalsByClientID, aclSets...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(clientAs(t, node.addr, "admin"))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "team-a.orders", "team-a.secret", "other"); err != nil {
		t.Fatal(err)
	}
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").Topics("team-a.").ResourcePatternType(kadm.ACLPatternPrefixed).
			Operations(kadm.OpRead, kadm.OpWrite),
		kadm.NewACLs().Allow("User:alice").Groups("team-a.").ResourcePatternType(kadm.ACLPatternPrefixed).
			Operations(kadm.OpRead),
		kadm.NewACLs().Deny("User:alice").Topics("team-a.secret").ResourcePatternType(kadm.ACLPatternLiteral).
			Operations(kadm.OpRead),
	} {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("create acl %+v: %v", r, r.Err)
			}
		}
	}
	if n := describeAllACLs(ctx, t, adm); n != 4 {
		t.Fatalf("%d ACLs described, want 4", n)
	}

	alice := clientAs(t, node.addr, "alice")
	t.Run("produce", func(t *testing.T) {
		if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "team-a.orders", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce inside the prefix: %v", err)
		}
		err := alice.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: []byte("v")}).FirstErr()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("produce to other: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
	})
	t.Run("consume and commit", func(t *testing.T) {
		cons := clientAs(t, node.addr, "alice", kgo.ConsumerGroup("team-a.g"), kgo.ConsumeTopics("team-a.orders"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		var got int
		for got == 0 && ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			if errs := fs.Errors(); len(errs) > 0 {
				t.Fatalf("poll: %v", errs)
			}
			got += fs.NumRecords()
		}
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit inside the prefix: %v", err)
		}
		offs, err := adm.FetchOffsets(ctx, "team-a.g")
		if err != nil || offs.Error() != nil {
			t.Fatalf("fetch offsets: %v %v", err, offs.Error())
		}
		if o, ok := offs.Lookup("team-a.orders", 0); !ok || o.At != 1 {
			t.Fatalf("committed offset %+v %v, want 1", o, ok)
		}
	})
	t.Run("outside the prefix", func(t *testing.T) {
		if err := fetchError(ctx, t, alice, adm, "other"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("fetch other: %v", err)
		}
		if err := commitOffset(ctx, alice, "team-a.g", "other"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("commit other in team-a.g: %v", err)
		}
		if err := commitOffset(ctx, alice, "other-g", "team-a.orders"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
			t.Errorf("commit in other-g: %v", err)
		}
		created, err := kadm.NewClient(alice).CreateTopics(ctx, 1, 1, nil, "team-a.new")
		if err != nil || !errors.Is(created["team-a.new"].Err, kerr.TopicAuthorizationFailed) {
			t.Errorf("create topic without CREATE: %v %v", err, created["team-a.new"].Err)
		}
	})
	t.Run("metadata hides other topics", func(t *testing.T) {
		topics, err := kadm.NewClient(alice).ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		names := topics.Names()
		slices.Sort(names)
		if !slices.Equal(names, []string{"team-a.orders", "team-a.secret"}) {
			t.Fatalf("alice lists %v", names)
		}
		// Auto-creation without CREATE is refused, not reported unknown.
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("team-a.new")
		req.Topics, req.AllowAutoTopicCreation = append(req.Topics, rt), true
		resp, err := req.RequestWith(ctx, alice)
		if err != nil || resp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("auto-create without CREATE: %v %v", err, resp)
		}
	})
	t.Run("deny overrides allow", func(t *testing.T) {
		if err := fetchError(ctx, t, alice, adm, "team-a.secret"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("fetch team-a.secret: %v", err)
		}
		if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "team-a.secret", Value: []byte("v")}).FirstErr(); err != nil {
			t.Errorf("produce to team-a.secret (WRITE is not denied): %v", err)
		}
		res, err := adm.DeleteACLs(ctx, kadm.NewACLs().Deny("User:alice").Topics("team-a.secret").
			ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead).DenyHosts())
		if err != nil || len(res) != 1 || res[0].Err != nil || len(res[0].Deleted) != 1 {
			t.Fatalf("delete the DENY: %v %+v", err, res)
		}
		if err := fetchError(ctx, t, alice, adm, "team-a.secret"); err != nil {
			t.Errorf("fetch team-a.secret after the DENY is gone: %v", err)
		}
	})
	t.Run("acl admin needs the cluster", func(t *testing.T) {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(ctx, alice)
		if err != nil || resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("alice DescribeAcls: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
		}
		res, err := kadm.NewClient(alice).CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("other").Operations(kadm.OpRead))
		if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
			t.Errorf("alice CreateAcls: %v %+v", err, res)
		}
	})
	t.Run("scram", func(t *testing.T) {
		altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
			{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-secret"},
			{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret"},
		})
		if err != nil || altered.Error() != nil {
			t.Fatalf("alter scram: %v %v", err, altered.Error())
		}
		checkAliceScram(ctx, t, node.Node, adm)
	})

	node.stop(t)
	node = startNodeWith(t, node.dir, principalsByClientID, aclSets...)
	adm = kadm.NewClient(clientAs(t, node.addr, "admin"))
	if n := describeAllACLs(ctx, t, adm); n != 3 {
		t.Fatalf("after restart: %d ACLs, want 3", n)
	}
	alice = clientAs(t, node.addr, "alice")
	err := alice.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: []byte("v")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("after restart, produce to other: %v", err)
	}
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "team-a.orders", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("after restart, produce inside the prefix: %v", err)
	}
	checkAliceScram(ctx, t, node.Node, adm)
}

// checkAliceScram: alice's two credentials are described, and the
// node's credential store verifies her password.
func checkAliceScram(ctx context.Context, t *testing.T, n *Node, adm *kadm.Client) {
	t.Helper()
	described, err := adm.DescribeUserSCRAMs(ctx, "alice")
	if err != nil || described.Error() != nil {
		t.Fatalf("describe scram: %v %v", err, described.Error())
	}
	if infos := described["alice"].CredInfos; len(infos) != 2 || infos[0].Iterations != 4096 || infos[1].Iterations != 8192 {
		t.Fatalf("alice's credentials: %+v", infos)
	}
	cred, ok, err := n.scramStore().ScramCredential(ctx, sasl.SHA256, "alice")
	if err != nil || !ok {
		t.Fatalf("store: %v %v", ok, err)
	}
	want, err := sasl.DeriveScramCredential(sasl.SHA256, "alice-secret", cred.Salt, cred.Iterations)
	if err != nil {
		t.Fatal(err)
	}
	if string(want.StoredKey) != string(cred.StoredKey) || string(want.ServerKey) != string(cred.ServerKey) {
		t.Fatal("stored SCRAM keys do not match the password")
	}
}

// clientID is the request's client id, "" when it has none.
func clientID(rc *server.RequestContext) string {
	if rc.Header.ClientID == nil {
		return ""
	}
	return *rc.Header.ClientID
}
