package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/security/sasl"
)

// TestCreateACLsValidation: each creation Kafka refuses gets
// INVALID_REQUEST, the valid ones in the same request are created.
func TestCreateACLsValidation(t *testing.T) {
	node := startNodeWith(t, "", principalsByClientID, aclSets...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin := clientAs(t, node.addr, "admin")
	valid := func() kmsg.CreateACLsRequestCreation {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName = kmsg.ACLResourceTypeTopic, "t"
		c.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host = "User:alice", "*"
		c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		return c
	}
	for _, tc := range []struct {
		name   string
		change func(*kmsg.CreateACLsRequestCreation)
		want   *kerr.Error
	}{
		{"valid", func(*kmsg.CreateACLsRequestCreation) {}, nil},
		{"user resource", func(c *kmsg.CreateACLsRequestCreation) { c.ResourceType = kmsg.ACLResourceTypeUser }, nil},
		{"delegation token", func(c *kmsg.CreateACLsRequestCreation) { c.ResourceType = kmsg.ACLResourceTypeDelegationToken }, nil},
		{"any resource type", func(c *kmsg.CreateACLsRequestCreation) { c.ResourceType = kmsg.ACLResourceTypeAny }, kerr.InvalidRequest},
		{"match pattern", func(c *kmsg.CreateACLsRequestCreation) { c.ResourcePatternType = kmsg.ACLResourcePatternTypeMatch }, kerr.InvalidRequest},
		{"any operation", func(c *kmsg.CreateACLsRequestCreation) { c.Operation = kmsg.ACLOperationAny }, kerr.InvalidRequest},
		{"unknown permission", func(c *kmsg.CreateACLsRequestCreation) { c.PermissionType = 0 }, kerr.InvalidRequest},
		{"empty name", func(c *kmsg.CreateACLsRequestCreation) { c.ResourceName = "" }, kerr.InvalidRequest},
		{"cluster name", func(c *kmsg.CreateACLsRequestCreation) { c.ResourceType = kmsg.ACLResourceTypeCluster }, kerr.InvalidRequest},
		{"principal without type", func(c *kmsg.CreateACLsRequestCreation) { c.Principal = "alice" }, kerr.InvalidRequest},
	} {
		req := kmsg.NewPtrCreateACLsRequest()
		c := valid()
		tc.change(&c)
		req.Creations = append(req.Creations, c)
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		if got := kerr.ErrorForCode(resp.Results[0].ErrorCode); got != tc.want && !(tc.want == nil && got == nil) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if n := len(node.store.Image().ACLs.All()); n != 3 {
		t.Errorf("%d ACLs created, want 3", n)
	}
	bad := kmsg.NewPtrDescribeACLsRequest()
	bad.ResourceType, bad.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	bad.Operation, bad.PermissionType = 0, kmsg.ACLPermissionTypeAny
	if resp, err := bad.RequestWith(ctx, admin); err != nil || resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("describe with an UNKNOWN operation: %v %v", err, resp)
	}
}

// TestAlterUserSCRAMErrors: Kafka's per-user errors of
// AlterUserScramCredentials and DescribeUserScramCredentials.
func TestAlterUserSCRAMErrors(t *testing.T) {
	node := startNodeWith(t, "", principalsByClientID, aclSets...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin := clientAs(t, node.addr, "admin")
	up := func(name string, mech int8, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations = name, mech, iterations
		u.Salt, u.SaltedPassword = []byte("salt"), make([]byte, 32)
		return u
	}
	del := func(name string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = name, mech
		return d
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("carol", 1)}
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		up("ok", 1, 4096),
		up("few", 1, 100),
		up("many", 2, 20000),
		up("mech", 9, 4096),
		up("dup", 1, 4096), up("dup", 1, 8192),
		up("", 1, 4096),
		up("half", 1, 4096), up("half", 2, 1), // one bad change: none applied
	}
	resp, err := req.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*kerr.Error{
		"carol": kerr.ResourceNotFound, "ok": nil, "few": kerr.UnacceptableCredential, "many": kerr.UnacceptableCredential,
		"mech": kerr.UnsupportedSaslMechanism, "dup": kerr.DuplicateResource, "": kerr.UnacceptableCredential,
		"half": kerr.UnacceptableCredential,
	}
	if len(resp.Results) != len(want) {
		t.Fatalf("%d results, want %d", len(resp.Results), len(want))
	}
	for _, r := range resp.Results {
		got := kerr.ErrorForCode(r.ErrorCode)
		if w := want[r.User]; got != w && !(w == nil && got == nil) {
			t.Errorf("user %q: %v, want %v", r.User, got, w)
		}
	}
	img := node.store.Image()
	if _, ok := img.ScramCredential("ok", 1); !ok {
		t.Error("ok's credential not stored")
	}
	if _, ok := img.ScramCredential("half", 1); ok {
		t.Error("half's valid change applied although another of its changes failed")
	}

	alice := clientAs(t, node.addr, "alice")
	req.Deletions, req.Upsertions = nil, req.Upsertions[:1]
	if resp, err := req.RequestWith(ctx, alice); err != nil || resp.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alice alters: %v %+v", err, resp)
	}

	d := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range []string{"ok", "nobody", "x", "x"} {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		d.Users = append(d.Users, ru)
	}
	dresp, err := d.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	dwant := map[string]*kerr.Error{"ok": nil, "nobody": kerr.ResourceNotFound, "x": kerr.DuplicateResource}
	if len(dresp.Results) != 3 {
		t.Fatalf("describe: %d results", len(dresp.Results))
	}
	for _, r := range dresp.Results {
		got := kerr.ErrorForCode(r.ErrorCode)
		if w := dwant[r.User]; got != w && !(w == nil && got == nil) {
			t.Errorf("describe %q: %v, want %v", r.User, got, w)
		}
	}
	if dresp, err := d.RequestWith(ctx, alice); err != nil || dresp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alice describes: %v %+v", err, dresp)
	}
}

// TestBootstrapScram: credentials given before the first start are in the
// metadata log; on a restart new ones are ignored.
func TestBootstrapScram(t *testing.T) {
	boot := func(user string) func(*Node) {
		return func(n *Node) {
			_, cred, err := sasl.ParseAddScram("SCRAM-SHA-256=[name=" + user + ",password=" + user + "-secret]")
			if err != nil {
				t.Fatal(err)
			}
			n.SetBootstrapScram([]BootstrapScram{{User: user, Credential: cred}})
		}
	}
	node := startNodeWith(t, "", boot("admin"))
	if _, ok := node.store.Image().ScramCredential("admin", sasl.SHA256.Type); !ok {
		t.Fatal("bootstrap credential missing")
	}
	node.stop(t)
	node = startNodeWith(t, node.dir, boot("late"))
	img := node.store.Image()
	if _, ok := img.ScramCredential("admin", sasl.SHA256.Type); !ok {
		t.Fatal("bootstrap credential lost on restart")
	}
	if _, ok := img.ScramCredential("late", sasl.SHA256.Type); ok {
		t.Fatal("bootstrap credential written into an existing cluster")
	}
}

// TestAuthorizerClass: an unknown authorizer class stops the node from
// being built; without an authorizer the ACL APIs answer
// SECURITY_DISABLED.
func TestAuthorizerClass(t *testing.T) {
	cfg, err := config.Load("", nil, []string{"node.id=1", "log.dirs=" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cfg.AuthorizerClassName = "com.example.Open"
	if _, err := NewNode(cfg, testLogger(t)); err == nil {
		t.Fatal("a node with an unknown authorizer class was built")
	}
	node := startNode(t, "")
	c := kafkatest.Dial(t, node.addr)
	req := kmsg.NewPtrDescribeACLsRequest()
	req.Version = 3
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if resp := c.RoundTrip(req).(*kmsg.DescribeACLsResponse); resp.ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeAcls without an authorizer: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}
