package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// The delegation token APIs' refusals, each with Kafka's error code, and
// the ACLs Kafka checks: CREATE_TOKENS on the USER resource of another
// owner, DESCRIBE_TOKENS on it (or DESCRIBE on the token) to see tokens
// one neither owns nor renews.
func TestDelegationTokenRequests(t *testing.T) {
	node := startSASLNode(t,
		"delegation.token.secret.key=cluster-test-secret",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found=false",
		"super.users=User:ANONYMOUS")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	as := func(user, pass string) *kadm.Client {
		return kadm.NewClient(saslClient(t, node.sasl, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())))
	}
	alice, carol := as("alice", "alice-secret"), as("carol", "carol-secret")
	adminCl := saslClient(t, node.addr) // PLAINTEXT: ANONYMOUS, a super user
	admin := kadm.NewClient(adminCl)

	// PLAINTEXT authenticates nobody: no token requests, super user or not.
	if _, err := admin.CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Fatalf("create over PLAINTEXT: %v", err)
	}
	if _, err := admin.DescribeDelegationTokens(ctx); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Fatalf("describe over PLAINTEXT: %v", err)
	}

	own, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{})
	if err != nil || own.Owner.Name != "alice" {
		t.Fatalf("alice's own token: %+v %v", own, err)
	}
	bobs := kadm.CreateDelegationToken{Owner: &kadm.Principal{Name: "bob"}}
	if _, err := alice.CreateDelegationToken(ctx, bobs); !errors.Is(err, kerr.DelegationTokenAuthorizationFailed) {
		t.Fatalf("a token for bob without CREATE_TOKENS: %v", err)
	}
	if _, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Renewers: []kadm.Principal{{Type: "Group", Name: "g"}}}); !errors.Is(err, kerr.InvalidPrincipalType) {
		t.Fatalf("a Group renewer: %v", err)
	}
	// grant allows principal op on the resource (kadm's builder has no
	// USER resources).
	grant := func(principal string, rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation) {
		t.Helper()
		req := kmsg.NewPtrCreateACLsRequest()
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
		resp, err := req.RequestWith(ctx, adminCl)
		if err != nil || resp.Results[0].ErrorCode != 0 {
			t.Fatalf("CreateACLs: %v %+v", err, resp)
		}
	}
	grant("User:alice", kmsg.ACLResourceTypeUser, "User:bob", kmsg.ACLOperationCreateTokens)
	forBob, err := alice.CreateDelegationToken(ctx, bobs)
	if err != nil || forBob.Owner.Name != "bob" || forBob.TokenRequesterPrincipal.Name != "alice" {
		t.Fatalf("a token for bob with CREATE_TOKENS: %+v %v", forBob, err)
	}

	// alice, the requester but neither owner nor renewer of bob's token,
	// sees her own token only; carol sees none until she may
	// DESCRIBE_TOKENS of bob.
	ids := func(c *kadm.Client) []string {
		t.Helper()
		toks, err := c.DescribeDelegationTokens(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range toks {
			out = append(out, d.TokenID)
		}
		return out
	}
	if got := ids(alice); len(got) != 1 || got[0] != own.TokenID {
		t.Fatalf("alice sees %v, want her token %s", got, own.TokenID)
	}
	if got := ids(carol); len(got) != 0 {
		t.Fatalf("carol sees %v", got)
	}
	grant("User:carol", kmsg.ACLResourceTypeUser, "User:bob", kmsg.ACLOperationDescribeTokens)
	if got := ids(carol); len(got) != 1 || got[0] != forBob.TokenID {
		t.Fatalf("carol with DESCRIBE_TOKENS of bob sees %v, want %s", got, forBob.TokenID)
	}
	grant("User:carol", kmsg.ACLResourceTypeDelegationToken, own.TokenID, kmsg.ACLOperationDescribe)
	if got := ids(carol); len(got) != 2 {
		t.Fatalf("carol with DESCRIBE on alice's token sees %v", got)
	}

	// Only the owner or a renewer renews or expires.
	if _, err := carol.RenewDelegationToken(ctx, own.HMAC, time.Minute); !errors.Is(err, kerr.DelegationTokenOwnerMismatch) {
		t.Fatalf("carol renewing alice's token: %v", err)
	}
	if _, err := alice.ExpireDelegationToken(ctx, forBob.HMAC, -time.Millisecond); !errors.Is(err, kerr.DelegationTokenOwnerMismatch) {
		t.Fatalf("alice expiring bob's token: %v", err)
	}
	if _, err := alice.ExpireDelegationToken(ctx, []byte("no such hmac"), time.Minute); !errors.Is(err, kerr.DelegationTokenNotFound) {
		t.Fatalf("expiring an unknown hmac: %v", err)
	}
}

// Without delegation.token.secret.key tokens are disabled.
func TestDelegationTokensDisabled(t *testing.T) {
	node := startSASLNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	alice := kadm.NewClient(saslClient(t, node.sasl, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())))
	if _, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Fatalf("create: %v", err)
	}
	if _, err := alice.DescribeDelegationTokens(ctx); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Fatalf("describe: %v", err)
	}
	if _, err := alice.RenewDelegationToken(ctx, []byte("x"), time.Minute); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Fatalf("renew: %v", err)
	}
}
