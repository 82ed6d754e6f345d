package security

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/security/sasl"
)

// loopback answers requests with a server-side SASLAuthenticator.
func loopback(a *SASLAuthenticator) RoundTrip {
	return func(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
		switch r := req.(type) {
		case *kmsg.SASLHandshakeRequest:
			resp, _ := a.Handshake(r)
			return resp, nil
		case *kmsg.SASLAuthenticateRequest:
			resp, _ := a.Authenticate(ctx, r)
			return resp, nil
		}
		return nil, fmt.Errorf("unexpected %T", req)
	}
}

func TestAuthenticateClient(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		session sasl.ClientSession
		wantErr error
	}{
		{"SCRAM", &sasl.ScramClient{Mech: sasl.SHA512, User: "alice", Password: "alice-secret"}, nil},
		{"PLAIN", &sasl.PlainClient{User: "admin", Password: "admin-secret"}, nil},
		{"SCRAM wrong password", &sasl.ScramClient{Mech: sasl.SHA512, User: "alice", Password: "x"}, kerr.SaslAuthenticationFailed},
		{"disabled mechanism", &sasl.ScramClient{Mech: sasl.SHA256, User: "alice", Password: "alice-secret"}, kerr.UnsupportedSaslMechanism},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := NewSASLAuthenticator(testSASLServer(t))
			err := AuthenticateClient(ctx, loopback(a), tc.session)
			if tc.wantErr == nil {
				if err != nil || !a.Authenticated() {
					t.Fatalf("err=%v authenticated=%v", err, a.Authenticated())
				}
				return
			}
			if !errors.Is(err, tc.wantErr) || a.Authenticated() {
				t.Fatalf("err=%v, want %v", err, tc.wantErr)
			}
		})
	}
}
