package security

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/security/sasl"
)

func testSASLServer(t *testing.T) *sasl.Server {
	t.Helper()
	creds := sasl.ScramCredentials{}
	c, err := sasl.DeriveScramCredential(sasl.SHA512, "alice-secret", nil, 4096)
	if err != nil {
		t.Fatal(err)
	}
	creds.Add("alice", c)
	srv, err := sasl.NewServer([]string{sasl.MechanismScramSHA512, sasl.MechanismPlain}, sasl.PlainUsers{"admin": "admin-secret"}, creds)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func handshakeReq(version int16, mech string) *kmsg.SASLHandshakeRequest {
	r := kmsg.NewPtrSASLHandshakeRequest()
	r.Version, r.Mechanism = version, mech
	return r
}

func authReq(b []byte) *kmsg.SASLAuthenticateRequest {
	r := kmsg.NewPtrSASLAuthenticateRequest()
	r.Version, r.SASLAuthBytes = 2, b
	return r
}

func TestSASLAuthenticatorScram(t *testing.T) {
	ctx := context.Background()
	a := NewSASLAuthenticator(testSASLServer(t))
	if !AllowedBeforeAuth(kmsg.ApiVersions.Int16()) || AllowedBeforeAuth(kmsg.Produce.Int16()) {
		t.Fatal("AllowedBeforeAuth")
	}
	hs, closeAfter := a.Handshake(handshakeReq(1, "SCRAM-SHA-512"))
	if closeAfter || hs.ErrorCode != 0 || strings.Join(hs.SupportedMechanisms, ",") != "SCRAM-SHA-512,PLAIN" {
		t.Fatalf("handshake %+v close=%v", hs, closeAfter)
	}
	client := &sasl.ScramClient{Mech: sasl.SHA512, User: "alice", Password: "alice-secret"}
	msg, err := client.Start()
	if err != nil {
		t.Fatal(err)
	}
	for !a.Authenticated() {
		resp, closeAfter := a.Authenticate(ctx, authReq(msg))
		if closeAfter || resp.ErrorCode != 0 {
			t.Fatalf("authenticate: %+v", resp)
		}
		var done bool
		if msg, done, err = client.Step(resp.SASLAuthBytes); err != nil {
			t.Fatal(err)
		}
		if done != a.Authenticated() {
			t.Fatalf("client done=%v server authenticated=%v", done, a.Authenticated())
		}
	}
	if a.Principal().String() != "User:alice" || a.Mechanism() != "SCRAM-SHA-512" {
		t.Fatalf("principal %s mechanism %s", a.Principal(), a.Mechanism())
	}
	// No re-authentication: a further handshake or token is a state error.
	if hs, closeAfter := a.Handshake(handshakeReq(1, "PLAIN")); hs.ErrorCode != kerr.IllegalSaslState.Code || !closeAfter {
		t.Fatalf("second handshake: %+v", hs)
	}
}

func TestSASLAuthenticatorFailures(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		run      func(a *SASLAuthenticator) (code int16, closeAfter bool)
		wantCode int16
	}{
		{"unsupported mechanism", func(a *SASLAuthenticator) (int16, bool) {
			r, c := a.Handshake(handshakeReq(1, "GSSAPI"))
			return r.ErrorCode, c
		}, kerr.UnsupportedSaslMechanism.Code},
		{"authenticate before handshake", func(a *SASLAuthenticator) (int16, bool) {
			r, c := a.Authenticate(ctx, authReq([]byte("\x00admin\x00admin-secret")))
			return r.ErrorCode, c
		}, kerr.IllegalSaslState.Code},
		{"wrong password", func(a *SASLAuthenticator) (int16, bool) {
			a.Handshake(handshakeReq(1, "PLAIN"))
			r, c := a.Authenticate(ctx, authReq([]byte("\x00admin\x00nope")))
			if r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "Invalid username or password") {
				t.Errorf("message %v", r.ErrorMessage)
			}
			return r.ErrorCode, c
		}, kerr.SaslAuthenticationFailed.Code},
		{"SaslAuthenticate after a v0 handshake", func(a *SASLAuthenticator) (int16, bool) {
			a.Handshake(handshakeReq(0, "PLAIN"))
			r, c := a.Authenticate(ctx, authReq([]byte("\x00admin\x00admin-secret")))
			return r.ErrorCode, c
		}, kerr.IllegalSaslState.Code},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := NewSASLAuthenticator(testSASLServer(t))
			code, closeAfter := tc.run(a)
			if code != tc.wantCode || !closeAfter || a.Authenticated() || a.Principal() != (Principal{}) {
				t.Fatalf("code=%d close=%v authenticated=%v, want code %d and close", code, closeAfter, a.Authenticated(), tc.wantCode)
			}
		})
	}
}

func TestSASLAuthenticatorRawV0(t *testing.T) {
	ctx := context.Background()
	a := NewSASLAuthenticator(testSASLServer(t))
	if _, err := a.AuthenticateRaw(ctx, []byte("x")); err == nil {
		t.Fatal("raw token before handshake accepted")
	}
	if hs, c := a.Handshake(handshakeReq(0, "PLAIN")); hs.ErrorCode != 0 || c {
		t.Fatalf("handshake %+v", hs)
	}
	if !a.ExpectRawToken() {
		t.Fatal("v0 handshake does not switch to raw tokens")
	}
	reply, err := a.AuthenticateRaw(ctx, []byte("\x00admin\x00admin-secret"))
	if err != nil || len(reply) != 0 || !a.Authenticated() || a.Principal() != User("admin") || a.ExpectRawToken() {
		t.Fatalf("reply=%q err=%v principal=%s", reply, err, a.Principal())
	}

	b := NewSASLAuthenticator(testSASLServer(t))
	b.Handshake(handshakeReq(0, "PLAIN"))
	if _, err := b.AuthenticateRaw(ctx, []byte("\x00admin\x00bad")); err == nil || b.Authenticated() {
		t.Fatalf("bad raw token: %v", err)
	}
}
