package metadata

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/kbroker/kbroker/metadata/features"
)

func tokenConfig(t *testing.T) Config {
	cfg := testConfig(t.TempDir())
	cfg.DelegationTokens = DelegationTokenConfig{Enabled: true, MaxLifetime: 2 * time.Hour, ExpiryTime: time.Hour}
	return cfg
}

var (
	alice = TokenPrincipal{Type: "User", Name: "alice"}
	bob   = TokenPrincipal{Type: "User", Name: "bob"}
	carol = TokenPrincipal{Type: "User", Name: "carol"}
)

// A token's life through the controller: created with Kafka's
// timestamps, renewed by a renewer (not by a stranger), shortened,
// expired at once; each step in the image.
func TestDelegationTokenLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := openReady(t, tokenConfig(t))
	if mv := s.Image().FeatureLevel(features.MetadataVersion); mv < features.MetadataVersionDelegationTokens {
		t.Fatalf("a new cluster is at metadata.version %d", mv)
	}
	before := time.Now().UnixMilli()
	tok, err := s.CreateDelegationToken(ctx, CreateTokenRequest{Owner: alice, Requester: alice, Renewers: []TokenPrincipal{bob}})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixMilli()
	if tok.TokenID == "" || tok.IssueMs < before || tok.IssueMs > after ||
		tok.MaxMs != tok.IssueMs+(2*time.Hour).Milliseconds() || tok.ExpiryMs != tok.IssueMs+time.Hour.Milliseconds() {
		t.Fatalf("token %+v", tok)
	}
	if got, ok := s.Image().DelegationToken(tok.TokenID); !ok || !reflect.DeepEqual(got, tok) {
		t.Fatalf("image has %+v, want %+v", got, tok)
	}

	// The requested lifetime shortens the maximum, never lengthens it.
	short, err := s.CreateDelegationToken(ctx, CreateTokenRequest{Owner: alice, Requester: alice, MaxLifetimeMs: 60_000})
	if err != nil {
		t.Fatal(err)
	}
	if short.MaxMs != short.IssueMs+60_000 || short.ExpiryMs != short.MaxMs {
		t.Fatalf("short token %+v", short)
	}
	long, err := s.CreateDelegationToken(ctx, CreateTokenRequest{Owner: alice, Requester: alice, MaxLifetimeMs: (100 * time.Hour).Milliseconds()})
	if err != nil {
		t.Fatal(err)
	}
	if long.MaxMs != long.IssueMs+(2*time.Hour).Milliseconds() {
		t.Fatalf("long token %+v", long)
	}

	if _, err := s.RenewDelegationToken(ctx, RenewTokenRequest{TokenID: tok.TokenID, Principal: carol}); !errors.Is(err, ErrDelegationTokenOwnerMismatch) {
		t.Fatalf("renewal by a stranger: %v", err)
	}
	if _, err := s.RenewDelegationToken(ctx, RenewTokenRequest{TokenID: "nope", Principal: alice}); !errors.Is(err, ErrDelegationTokenNotFound) {
		t.Fatalf("renewal of an unknown token: %v", err)
	}
	exp, err := s.RenewDelegationToken(ctx, RenewTokenRequest{TokenID: tok.TokenID, Principal: bob, ExpiryPeriodMs: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Image().DelegationToken(tok.TokenID); got.ExpiryMs != exp || exp < before+10_000 || exp > time.Now().UnixMilli()+10_000 {
		t.Fatalf("renewed to %d, image %d", exp, got.ExpiryMs)
	}
	// A renew period beyond delegation.token.expiry.time.ms is capped.
	exp, err = s.RenewDelegationToken(ctx, RenewTokenRequest{TokenID: tok.TokenID, Principal: alice, ExpiryPeriodMs: (50 * time.Hour).Milliseconds()})
	if err != nil || exp > time.Now().UnixMilli()+time.Hour.Milliseconds() {
		t.Fatalf("renewed to %d: %v", exp, err)
	}

	exp, err = s.ExpireDelegationToken(ctx, RenewTokenRequest{TokenID: tok.TokenID, Principal: bob, ExpiryPeriodMs: 5_000})
	if err != nil || exp > time.Now().UnixMilli()+5_000 {
		t.Fatalf("expire in 5s: %d %v", exp, err)
	}
	if _, err := s.ExpireDelegationToken(ctx, RenewTokenRequest{TokenID: tok.TokenID, Principal: carol, ExpiryPeriodMs: -1}); !errors.Is(err, ErrDelegationTokenOwnerMismatch) {
		t.Fatalf("expiry by a stranger: %v", err)
	}
	if _, err := s.ExpireDelegationToken(ctx, RenewTokenRequest{TokenID: tok.TokenID, Principal: alice, ExpiryPeriodMs: -1}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Image().DelegationToken(tok.TokenID); ok {
		t.Fatal("token expired at once is still in the image")
	}
	if _, err := s.ExpireDelegationToken(ctx, RenewTokenRequest{TokenID: tok.TokenID, Principal: alice, ExpiryPeriodMs: -1}); !errors.Is(err, ErrDelegationTokenNotFound) {
		t.Fatalf("expiring a removed token: %v", err)
	}
	if _, err := s.CreateDelegationToken(ctx, CreateTokenRequest{Owner: alice, Requester: alice, Renewers: []TokenPrincipal{{Type: "Group", Name: "g"}}}); !errors.Is(err, ErrInvalidPrincipalType) {
		t.Fatalf("renewer of type Group: %v", err)
	}
}

// An expired token can be neither renewed nor shortened, and the active
// controller removes it after delegation.token.expiry.check.interval.ms.
func TestDelegationTokenExpirySweep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := tokenConfig(t)
	cfg.DelegationTokens.ExpiryCheckInterval = 50 * time.Millisecond
	s := openReady(t, cfg)
	keep, err := s.CreateDelegationToken(ctx, CreateTokenRequest{Owner: alice, Requester: alice})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.CreateDelegationToken(ctx, CreateTokenRequest{Owner: alice, Requester: alice, MaxLifetimeMs: 1})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // past its 1ms lifetime
	if _, err := s.RenewDelegationToken(ctx, RenewTokenRequest{TokenID: tok.TokenID, Principal: alice}); err != nil && !errors.Is(err, ErrDelegationTokenExpired) && !errors.Is(err, ErrDelegationTokenNotFound) {
		t.Fatalf("renewing an expired token: %v", err)
	} else if err == nil {
		t.Fatal("an expired token was renewed")
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, ok := s.Image().DelegationToken(tok.TokenID); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the expired token was not removed within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, ok := s.Image().DelegationToken(keep.TokenID); !ok {
		t.Fatal("the sweep removed a live token")
	}
}

func TestDelegationTokensDisabled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := openReady(t, testConfig(t.TempDir()))
	if _, err := s.CreateDelegationToken(ctx, CreateTokenRequest{Owner: alice, Requester: alice}); !errors.Is(err, ErrDelegationTokensDisabled) {
		t.Fatalf("create without a secret: %v", err)
	}
}

// The token records apply from metadata.version 4 only, survive a
// snapshot, and the removal of an unknown token is rejected.
func TestDelegationTokenRecords(t *testing.T) {
	tok := &DelegationToken{TokenID: "id1", Owner: alice, Requester: bob, Renewers: []TokenPrincipal{carol}, IssueMs: 1, MaxMs: 3, ExpiryMs: 2}
	rec, err := encodeRecord(recDelegationToken, tok)
	if err != nil {
		t.Fatal(err)
	}
	rm, err := encodeRecord(recRemoveDelegationToken, &removeDelegationTokenRecord{TokenID: "id1"})
	if err != nil {
		t.Fatal(err)
	}
	at := func(level int16) *Image {
		img := emptyImage()
		img.features = map[string]int16{features.MetadataVersion: level}
		return img
	}

	img, res := applyEntry(at(features.MetadataVersionAlterPartitionBatch), 1, rec)
	if !errors.Is(res.(error), ErrUnsupportedRecord) || len(img.Tokens) != 0 {
		t.Fatalf("at metadata.version 3: %v, %d tokens", res, len(img.Tokens))
	}
	img, res = applyEntry(at(features.MetadataVersionDelegationTokens), 1, rec)
	if res != nil {
		t.Fatal(res)
	}
	if got, ok := img.DelegationToken("id1"); !ok || !reflect.DeepEqual(got, tok) {
		t.Fatalf("applied %+v", got)
	}

	var buf bytes.Buffer
	if err := writeSnapshot(&buf, img); err != nil {
		t.Fatal(err)
	}
	restored, err := readSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(restored.Tokens, img.Tokens) {
		t.Fatalf("snapshot restored %+v, want %+v", restored.Tokens, img.Tokens)
	}

	next, res := applyEntry(img, 2, rm)
	if res != nil || len(next.Tokens) != 0 || len(img.Tokens) != 1 {
		t.Fatalf("remove: %v, %d tokens, the old image %d", res, len(next.Tokens), len(img.Tokens))
	}
	if _, res := applyEntry(next, 3, rm); !errors.Is(res.(error), ErrDelegationTokenNotFound) {
		t.Fatalf("removing an unknown token: %v", res)
	}
}
