package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/security/sasl"
)

// startACLQuorum starts two broker+controller nodes forming one quorum,
// with the ACL authorizer and the client-id principal hook.
func startACLQuorum(t *testing.T) [2]*testNode {
	t.Helper()
	nodes := startQuorum(t, 2, principalsByClientID, append([]string{"controlled.shutdown.enable=false"}, aclSets...)...)
	return [2]*testNode(nodes)
}

// TestACLsAndScramReachEveryNode: an ACL and a SCRAM user created through
// one node are enforced and usable on the other as soon as its image has
// them.
func TestACLsAndScramReachEveryNode(t *testing.T) {
	nodes := startACLQuorum(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(clientAs(t, nodes[0].addr, "admin"))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "shared"); err != nil {
		t.Fatal(err)
	}
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").Topics("shared").Operations(kadm.OpDescribe))
	if err != nil || res[0].Err != nil {
		t.Fatalf("create acl: %v %+v", err, res)
	}
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "pw"}})
	if err != nil || altered.Error() != nil {
		t.Fatalf("alter scram: %v %v", err, altered.Error())
	}
	other := nodes[1]
	testutil.Eventually(t, 5*time.Second, func() bool {
		_, ok, _ := other.scramStore().ScramCredential(ctx, sasl.SHA512, "bob")
		return ok
	}, "the credential on the other node")
	// Bob's metadata request, sent to the other node, names the topic.
	bob := clientAs(t, other.addr, "bob")
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("shared")
	req.Topics = append(req.Topics, rt)
	testutil.Eventually(t, 5*time.Second, func() bool {
		resp, err := bob.Broker(2).Request(ctx, req)
		if err != nil {
			return false
		}
		mr := resp.(*kmsg.MetadataResponse)
		return len(mr.Topics) == 1 && mr.Topics[0].ErrorCode == 0
	}, "bob may describe shared on the other node")
	// Alice has no ACL: the topic is refused to her there.
	alice := clientAs(t, other.addr, "alice")
	resp, err := alice.Broker(2).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.MetadataResponse).Topics[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice on the other node: %v", kerr.ErrorForCode(code))
	}
}
