package itest

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/internal/testutil"
)

// tokenClient is a franz-go client authenticating with a delegation token:
// SCRAM-SHA-512 with the tokenauth extension, the token id as the user and
// its HMAC in base64 as the password.
func (s *scramBroker) tokenClient(t *testing.T, tok kadm.DelegationToken, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	auth := kscram.Auth{User: tok.TokenID, Pass: base64.StdEncoding.EncodeToString(tok.HMAC), IsToken: true}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(s.secure),
		kgo.DialTLSConfig(&tls.Config{RootCAs: s.pki.pool()}),
		kgo.SASL(auth.AsSha512Mechanism()),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// tokenAuthFails checks that a client with tok cannot authenticate.
func (s *scramBroker) tokenAuthFails(t *testing.T, tok kadm.DelegationToken) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := s.tokenClient(t, tok)
	err := cl.Ping(ctx)
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a client with token %s: %v, want SASL_AUTHENTICATION_FAILED", tok.TokenID, err)
	}
}

// TestDelegationTokens: alice (SCRAM) creates a token; a second franz-go
// client authenticates with it (SCRAM tokenauth) as alice, produces and
// consumes under alice's ACLs, and may not create tokens itself; the token
// is described, renewed and expired; an expired token fails
// authentication and the controller removes it.
func TestDelegationTokens(t *testing.T) {
	s := startScramBroker(t,
		"delegation.token.secret.key=itest-delegation-secret",
		"delegation.token.expiry.check.interval.ms=500")
	s.grantAlice(t)
	topic := scramPrefix + "tokens"
	s.createTopics(t, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	alice := kadm.NewClient(s.client(t, "alice", scramAlicePass))
	tok, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Renewers: []kadm.Principal{{Name: "admin"}}})
	if err != nil {
		t.Fatalf("CreateDelegationToken as alice: %v", err)
	}
	if tok.Owner.Name != "alice" || tok.TokenRequesterPrincipal.Name != "alice" || tok.TokenID == "" || len(tok.HMAC) != 64 ||
		tok.ExpiryTimestamp.Sub(tok.IssueTimestamp) != 24*time.Hour || tok.MaxTimestamp.Sub(tok.IssueTimestamp) != 7*24*time.Hour {
		t.Fatalf("token %+v", tok)
	}

	// The token authenticates as alice: alice's ACLs let it produce and
	// consume alice- topics.
	tc := s.tokenClient(t, tok, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	const n = 10
	for i := range n {
		if err := tc.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "token-%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d with the token: %v", i, err)
		}
	}
	seen := map[string]bool{}
	for len(seen) < n {
		fs := tc.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d with the token: %v", len(seen), n, err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s/%d with the token: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}

	// A token-authenticated connection may not ask for tokens.
	if _, err := kadm.NewClient(tc).CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Fatalf("CreateDelegationToken with a token: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", err)
	}
	// A wrong HMAC does not authenticate.
	forged := tok
	forged.HMAC = append([]byte(nil), tok.HMAC...)
	forged.HMAC[0] ^= 1
	s.tokenAuthFails(t, forged)

	// Described to its owner and to admin (a renewer and super user).
	for who, adm := range map[string]*kadm.Client{"alice": alice, "admin": s.admin(t)} {
		toks, err := adm.DescribeDelegationTokens(ctx)
		if err != nil {
			t.Fatalf("DescribeDelegationTokens as %s: %v", who, err)
		}
		if len(toks) != 1 || toks[0].TokenID != tok.TokenID || string(toks[0].HMAC) != string(tok.HMAC) {
			t.Fatalf("DescribeDelegationTokens as %s: %+v", who, toks)
		}
	}

	// Renewal moves the expiry to now + the period.
	before := time.Now()
	exp, err := alice.RenewDelegationToken(ctx, tok.HMAC, time.Hour)
	if err != nil {
		t.Fatalf("RenewDelegationToken: %v", err)
	}
	if exp.Before(before.Add(time.Hour-time.Second)) || exp.After(time.Now().Add(time.Hour)) {
		t.Fatalf("renewed until %v, want about an hour from %v", exp, before)
	}
	if _, err := alice.RenewDelegationToken(ctx, []byte("not a token's hmac"), time.Hour); !errors.Is(err, kerr.DelegationTokenNotFound) {
		t.Fatalf("renewing an unknown HMAC: %v", err)
	}

	// A token that expires on its own fails authentication, and the
	// controller removes it.
	short, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{MaxLifetime: 2 * time.Second})
	if err != nil {
		t.Fatalf("CreateDelegationToken of 2s: %v", err)
	}
	if err := s.tokenClient(t, short).Ping(ctx); err != nil {
		t.Fatalf("a fresh 2s token: %v", err)
	}
	time.Sleep(time.Until(short.MaxTimestamp.Add(100 * time.Millisecond)))
	s.tokenAuthFails(t, short)
	testutil.Eventually(t, 10*time.Second, func() error {
		toks, err := alice.DescribeDelegationTokens(ctx)
		if err != nil {
			return err
		}
		for _, d := range toks {
			if d.TokenID == short.TokenID {
				return fmt.Errorf("expired token %s still listed", d.TokenID)
			}
		}
		return nil
	}, "the controller removes the expired token")

	// Expiring the first token at once removes it: new connections fail.
	if _, err := alice.ExpireDelegationToken(ctx, tok.HMAC, -time.Millisecond); err != nil {
		t.Fatalf("ExpireDelegationToken: %v", err)
	}
	s.tokenAuthFails(t, tok)
	if toks, err := alice.DescribeDelegationTokens(ctx); err != nil || len(toks) != 0 {
		t.Fatalf("tokens after expiry: %+v %v", toks, err)
	}
}
