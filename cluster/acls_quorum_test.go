package cluster

import (
	"context"
	"fmt"
	"github.com/kbroker/kbroker/internal/testutil"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/security/sasl"
)

// startACLQuorum starts two broker+controller nodes forming one quorum,
// with the ACL authorizer and the client-id principal hook.
func startACLQuorum(t *testing.T) [2]*testNode {
	t.Helper()
	ports := testutil.MustReservePorts(t, 2)
	ctrl := [2]int{ports.Port(0), ports.Port(1)}
	voters := fmt.Sprintf("1@127.0.0.1:%d,2@127.0.0.1:%d", ctrl[0], ctrl[1])
	var nodes [2]*testNode
	ports.MustRelease(t)
	for i := range nodes {
		cfg, err := config.Load("", nil, append([]string{
			"node.id=" + strconv.Itoa(i+1),
			"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:" + strconv.Itoa(ctrl[i]),
			"controller.quorum.voters=" + voters,
			"log.dirs=" + t.TempDir(),
			"controlled.shutdown.enable=false",
		}, aclSets...))
		if err != nil {
			t.Fatal(err)
		}
		n, err := NewNode(cfg, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		principalsByClientID(n)
		ctx, cancel := context.WithCancel(context.Background())
		tn := &testNode{Node: n, cancel: cancel, done: make(chan error, 1)}
		go func() { tn.done <- n.Run(ctx) }()
		nodes[i] = tn
		t.Cleanup(func() { tn.stop(t) })
	}
	for _, tn := range nodes {
		select {
		case <-tn.Ready():
		case err := <-tn.done:
			t.Fatalf("node exited before ready: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("node not ready after 30s")
		}
		tn.addr, _ = tn.Addr("PLAINTEXT")
	}
	return nodes
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
