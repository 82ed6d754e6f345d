package sasl

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// tokenStore is a CredentialStore with delegation tokens.
type tokenStore struct {
	ScramCredentials
	tokens map[string]TokenCredential
}

func (s tokenStore) DelegationTokenCredential(_ context.Context, m ScramMechanism, id string) (TokenCredential, bool, error) {
	tc, ok := s.tokens[id+"/"+m.Name()]
	return tc, ok, nil
}

func TestTokenHMAC(t *testing.T) {
	// HMAC-SHA512 is 64 bytes; a different id or key gives another.
	a := TokenHMAC([]byte("secret"), "id1")
	if len(a) != 64 || string(a) == string(TokenHMAC([]byte("secret"), "id2")) || string(a) == string(TokenHMAC([]byte("other"), "id1")) {
		t.Fatalf("TokenHMAC %x", a)
	}
	if string(a) != string(TokenHMAC([]byte("secret"), "id1")) {
		t.Fatal("TokenHMAC is not deterministic")
	}
}

// runScram drives franz-go's SCRAM client against srv in memory.
func runScram(t *testing.T, srv *Server, mechName string, auth scram.Auth) (ServerSession, error) {
	t.Helper()
	fn := func(context.Context) (scram.Auth, error) { return auth, nil }
	mech := scram.Sha256(fn)
	if mechName == MechanismScramSHA512 {
		mech = scram.Sha512(fn)
	}
	ctx := context.Background()
	client, msg, err := mech.Authenticate(ctx, "broker:9092")
	if err != nil {
		t.Fatal(err)
	}
	server, err := srv.Start(mech.Name())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		challenge, err := server.Step(ctx, msg)
		if err != nil {
			return server, err
		}
		done, next, err := client.Challenge(challenge)
		if err != nil {
			t.Fatalf("franz-go client rejected the server: %v", err)
		}
		if done {
			return server, nil
		}
		msg = next
	}
	t.Fatal("exchange did not finish in 4 steps")
	return nil, nil
}

func TestScramTokenAuth(t *testing.T) {
	secret := []byte("cluster-token-secret")
	hmac := TokenHMAC(secret, "tok1")
	store := tokenStore{ScramCredentials: scramStore(t), tokens: map[string]TokenCredential{}}
	future, past := time.Now().Add(time.Hour), time.Now().Add(-time.Second)
	for _, m := range []ScramMechanism{SHA256, SHA512} {
		for id, expiry := range map[string]time.Time{"tok1": future, "old": past} {
			cred, err := DeriveTokenCredential(m, TokenHMAC(secret, id), nil)
			if err != nil {
				t.Fatal(err)
			}
			store.tokens[id+"/"+m.Name()] = TokenCredential{Owner: "alice", Credential: cred, Expiry: expiry}
		}
	}
	srv, err := NewServer([]string{MechanismScramSHA256, MechanismScramSHA512}, nil, store)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		auth    scram.Auth
		wantErr string // "" = success as alice with a token
	}{
		{"token", scram.Auth{User: "tok1", Pass: TokenPassword(hmac), IsToken: true}, ""},
		{"wrong hmac", scram.Auth{User: "tok1", Pass: TokenPassword(TokenHMAC([]byte("wrong"), "tok1")), IsToken: true}, "invalid credentials"},
		{"unknown token", scram.Auth{User: "nope", Pass: TokenPassword(hmac), IsToken: true}, "invalid credentials"},
		{"expired token", scram.Auth{User: "old", Pass: TokenPassword(TokenHMAC(secret, "old")), IsToken: true}, "invalid credentials"},
		{"token id without tokenauth", scram.Auth{User: "tok1", Pass: TokenPassword(hmac)}, "invalid credentials"},
		{"user's password as a token", scram.Auth{User: "alice", Pass: "alice-secret", IsToken: true}, "invalid credentials"},
	}
	for _, tc := range cases {
		for _, mech := range []string{MechanismScramSHA256, MechanismScramSHA512} {
			t.Run(tc.name+"/"+mech, func(t *testing.T) {
				server, err := runScram(t, srv, mech, tc.auth)
				ts := server.(TokenSession)
				if tc.wantErr == "" {
					if err != nil || !server.Done() || server.Username() != "alice" || !ts.TokenAuthenticated() || !ts.CredentialExpiry().Equal(future) {
						t.Fatalf("err=%v done=%v user=%q token=%v expiry=%v", err, server.Done(), server.Username(), ts.TokenAuthenticated(), ts.CredentialExpiry())
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrAuthenticationFailed) {
					t.Fatalf("err=%v, want one containing %q", err, tc.wantErr)
				}
				if server.Done() || server.Username() != "" || ts.TokenAuthenticated() {
					t.Fatal("failed session reports a user or a token")
				}
			})
		}
	}
	// A password user is not token authenticated.
	server, err := runScram(t, srv, MechanismScramSHA256, scram.Auth{User: "alice", Pass: "alice-secret"})
	if err != nil || server.Username() != "alice" || server.(TokenSession).TokenAuthenticated() {
		t.Fatalf("password login: err=%v user=%q token=%v", err, server.Username(), server.(TokenSession).TokenAuthenticated())
	}
}

// Extensions other than tokenauth are refused; tokenauth=false is a
// password login; our own client sends tokenauth=true.
func TestScramExtensions(t *testing.T) {
	store := scramStore(t)
	for _, tc := range []struct {
		msg     string
		wantErr string
	}{
		{"n,,n=alice,r=abc,foo=bar", "unsupported"},
		{"n,,n=alice,r=abc,tokenauth", "unsupported"},
		{"n,,n=alice,r=abc,tokenauth=false", ""},
		{"n,,n=alice,r=abc,tokenauth=TRUE", ""},
	} {
		s := newScramServer(SHA256, store)
		_, err := s.Step(context.Background(), []byte(tc.msg))
		if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err=%v, want %q", tc.msg, err, tc.wantErr)
		}
	}
	c := &ScramClient{Mech: SHA256, User: "tok", Password: "x", Nonce: "abc", Token: true}
	if m, err := c.Start(); err != nil || string(m) != "n,,n=tok,r=abc,tokenauth=true" {
		t.Fatalf("client-first %q %v", m, err)
	}
}
