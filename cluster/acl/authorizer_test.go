package acl

import (
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/metadata"
)

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	cluster = kmsg.ACLResourceTypeCluster
	lit     = metadata.ACLPatternLiteral
	pre     = metadata.ACLPatternPrefixed
	allow   = metadata.ACLPermissionAllow
	deny    = metadata.ACLPermissionDeny
)

type entry struct {
	rt        kmsg.ACLResourceType
	pattern   int8
	name      string
	principal string
	host      string
	op        kmsg.ACLOperation
	perm      int8
}

func image(version uint64, entries ...entry) *metadata.Image {
	var acls []metadata.ACL
	for i, e := range entries {
		acls = append(acls, metadata.ACL{ID: [16]byte{byte(i + 1)}, ResourceType: int8(e.rt), ResourceName: e.name,
			PatternType: e.pattern, Principal: e.principal, Host: e.host, Operation: int8(e.op), Permission: e.perm})
	}
	return &metadata.Image{ACLs: metadata.NewACLs(acls), ACLVersion: version}
}

func TestAuthorize(t *testing.T) {
	const alice, bob, admin = "User:alice", "User:bob", "User:admin"
	const h1, h2 = "10.0.0.1", "10.0.0.2"
	type ask struct {
		principal, host string
		op              kmsg.ACLOperation
		rt              kmsg.ACLResourceType
		name            string
		want            bool
	}
	for _, tc := range []struct {
		name          string
		acls          []entry
		allowEveryone bool
		asks          []ask
	}{
		{"literal", []entry{{topic, lit, "orders", alice, "*", kmsg.ACLOperationRead, allow}}, false, []ask{
			{alice, h1, kmsg.ACLOperationRead, topic, "orders", true},
			{alice, h1, kmsg.ACLOperationRead, topic, "orders2", false},
			{alice, h1, kmsg.ACLOperationWrite, topic, "orders", false},
			{bob, h1, kmsg.ACLOperationRead, topic, "orders", false},
			{alice, h1, kmsg.ACLOperationRead, group, "orders", false},
		}},
		{"prefixed", []entry{{topic, pre, "team-", alice, "*", kmsg.ACLOperationWrite, allow}}, false, []ask{
			{alice, h1, kmsg.ACLOperationWrite, topic, "team-a", true},
			{alice, h1, kmsg.ACLOperationWrite, topic, "team-", true},
			{alice, h1, kmsg.ACLOperationWrite, topic, "team", false},
			{alice, h1, kmsg.ACLOperationWrite, topic, "other", false},
		}},
		{"wildcard resource and principal", []entry{{topic, lit, "*", "User:*", "*", kmsg.ACLOperationRead, allow}}, false, []ask{
			{alice, h1, kmsg.ACLOperationRead, topic, "anything", true},
			{bob, h2, kmsg.ACLOperationRead, topic, "x", true},
			{bob, h2, kmsg.ACLOperationWrite, topic, "x", false},
		}},
		{"host", []entry{{topic, lit, "t", alice, h1, kmsg.ACLOperationRead, allow}}, false, []ask{
			{alice, h1, kmsg.ACLOperationRead, topic, "t", true},
			{alice, h2, kmsg.ACLOperationRead, topic, "t", false},
		}},
		{"deny wins", []entry{
			{topic, pre, "", alice, "*", kmsg.ACLOperationAll, allow},
			{topic, pre, "team-", alice, "*", kmsg.ACLOperationAll, allow},
			{topic, lit, "team-secret", alice, "*", kmsg.ACLOperationRead, deny},
			{topic, lit, "*", "User:*", h2, kmsg.ACLOperationWrite, deny},
		}, false, []ask{
			{alice, h1, kmsg.ACLOperationRead, topic, "team-a", true},
			{alice, h1, kmsg.ACLOperationRead, topic, "team-secret", false},
			// Denying READ does not deny DESCRIBE, which ALL allows.
			{alice, h1, kmsg.ACLOperationDescribe, topic, "team-secret", true},
			{alice, h2, kmsg.ACLOperationWrite, topic, "team-a", false},
			{alice, h1, kmsg.ACLOperationWrite, topic, "team-a", true},
		}},
		{"deny ALL", []entry{
			{group, lit, "g", alice, "*", kmsg.ACLOperationRead, allow},
			{group, lit, "g", alice, "*", kmsg.ACLOperationAll, deny},
		}, false, []ask{{alice, h1, kmsg.ACLOperationRead, group, "g", false}}},
		{"implied describe", []entry{
			{topic, lit, "r", alice, "*", kmsg.ACLOperationRead, allow},
			{topic, lit, "w", alice, "*", kmsg.ACLOperationWrite, allow},
			{topic, lit, "d", alice, "*", kmsg.ACLOperationDelete, allow},
			{topic, lit, "a", alice, "*", kmsg.ACLOperationAlter, allow},
			{topic, lit, "c", alice, "*", kmsg.ACLOperationCreate, allow},
			{topic, lit, "ac", alice, "*", kmsg.ACLOperationAlterConfigs, allow},
		}, false, []ask{
			{alice, h1, kmsg.ACLOperationDescribe, topic, "r", true},
			{alice, h1, kmsg.ACLOperationDescribe, topic, "w", true},
			{alice, h1, kmsg.ACLOperationDescribe, topic, "d", true},
			{alice, h1, kmsg.ACLOperationDescribe, topic, "a", true},
			{alice, h1, kmsg.ACLOperationDescribe, topic, "c", false},
			{alice, h1, kmsg.ACLOperationDescribeConfigs, topic, "ac", true},
			{alice, h1, kmsg.ACLOperationDescribe, topic, "ac", false},
			{alice, h1, kmsg.ACLOperationRead, topic, "w", false},
		}},
		{"super user", []entry{{cluster, lit, "kafka-cluster", "User:*", "*", kmsg.ACLOperationAll, deny}}, false, []ask{
			{admin, h1, kmsg.ACLOperationAlter, cluster, "kafka-cluster", true},
			{alice, h1, kmsg.ACLOperationAlter, cluster, "kafka-cluster", false},
		}},
		{"allow everyone if no acl found", []entry{{topic, lit, "guarded", alice, "*", kmsg.ACLOperationRead, allow}}, true, []ask{
			{bob, h1, kmsg.ACLOperationWrite, topic, "free", true},
			{bob, h1, kmsg.ACLOperationRead, topic, "guarded", false},
			{alice, h1, kmsg.ACLOperationRead, topic, "guarded", true},
		}},
		{"no acls, default deny", nil, false, []ask{{bob, h1, kmsg.ACLOperationRead, topic, "free", false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := image(1, tc.acls...)
			a := New(Config{Image: func() *metadata.Image { return img }, SuperUsers: []string{admin},
				AllowEveryoneIfNoACLFound: tc.allowEveryone})
			for range 2 { // the second round answers from the cache
				for _, q := range tc.asks {
					if got := a.Authorize(q.principal, q.host, q.op, q.rt, q.name); got != q.want {
						t.Errorf("%s@%s %v %v %q: %v, want %v", q.principal, q.host, q.op, q.rt, q.name, got, q.want)
					}
				}
			}
		})
	}
}

func TestAuthorizeAny(t *testing.T) {
	const alice = "User:alice"
	w := kmsg.ACLOperationWrite
	for _, tc := range []struct {
		name          string
		acls          []entry
		allowEveryone bool
		want          bool
	}{
		{"no acls", nil, false, false},
		{"no acls, allow everyone", nil, true, true},
		{"literal allow", []entry{{topic, lit, "t", alice, "*", w, allow}}, false, true},
		{"prefixed allow", []entry{{topic, pre, "p-", alice, "*", w, allow}}, false, true},
		{"allow of another principal", []entry{{topic, lit, "t", "User:bob", "*", w, allow}}, false, false},
		{"read only", []entry{{topic, lit, "t", alice, "*", kmsg.ACLOperationRead, allow}}, false, false},
		{"allow denied literally", []entry{
			{topic, lit, "t", alice, "*", w, allow}, {topic, lit, "t", alice, "*", w, deny}}, false, false},
		{"allow under a denied prefix", []entry{
			{topic, pre, "p-x", alice, "*", w, allow}, {topic, pre, "p-", alice, "*", w, deny}}, false, false},
		{"one of two allowed", []entry{
			{topic, lit, "t", alice, "*", w, allow}, {topic, lit, "u", alice, "*", w, allow},
			{topic, lit, "t", alice, "*", w, deny}}, false, true},
		{"deny all", []entry{
			{topic, lit, "t", alice, "*", w, allow}, {topic, lit, "*", "User:*", "*", w, deny}}, false, false},
		{"group acl does not count", []entry{{group, lit, "t", alice, "*", w, allow}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := image(1, tc.acls...)
			a := New(Config{Image: func() *metadata.Image { return img }, AllowEveryoneIfNoACLFound: tc.allowEveryone})
			if got := a.AuthorizeAny(alice, "h", w, topic); got != tc.want {
				t.Errorf("AuthorizeAny = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCacheFollowsACLVersion: a cached decision is dropped when the
// image's ACL version moves.
func TestCacheFollowsACLVersion(t *testing.T) {
	var cur atomic.Pointer[metadata.Image]
	cur.Store(image(1))
	a := New(Config{Image: cur.Load})
	ask := func() bool { return a.Authorize("User:alice", "h", kmsg.ACLOperationRead, topic, "t") }
	if ask() {
		t.Fatal("allowed without ACLs")
	}
	cur.Store(image(2, entry{topic, lit, "t", "User:alice", "*", kmsg.ACLOperationRead, allow}))
	if !ask() {
		t.Fatal("new ACL not seen")
	}
	cur.Store(image(3))
	if ask() {
		t.Fatal("removed ACL still allows")
	}
}

func TestParseSuperUsers(t *testing.T) {
	got, err := ParseSuperUsers(" User:admin ; User:broker;")
	if err != nil || len(got) != 2 || got[0] != "User:admin" || got[1] != "User:broker" {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := ParseSuperUsers("admin"); err == nil {
		t.Fatal("accepted a principal without a type")
	}
}
