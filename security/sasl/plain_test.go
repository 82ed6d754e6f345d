package sasl

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/plain"
)

func TestPlainServer(t *testing.T) {
	users := PlainUsers{"admin": "admin-secret", "alice": "alice-secret"}
	srv, err := NewServer([]string{MechanismPlain}, users, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		msg     string
		user    string // "" = must fail
		wantErr string
	}{
		{"ok", "\x00alice\x00alice-secret", "alice", ""},
		{"authzid equal", "alice\x00alice\x00alice-secret", "alice", ""},
		{"authzid other", "admin\x00alice\x00alice-secret", "", "authorization id"},
		{"wrong password", "\x00alice\x00admin-secret", "", "Invalid username or password"},
		{"unknown user", "\x00bob\x00alice-secret", "", "Invalid username or password"},
		{"two tokens", "alice\x00alice-secret", "", "expected 3 tokens"},
		{"four tokens", "\x00alice\x00alice-secret\x00", "", "expected 3 tokens"},
		{"no user", "\x00\x00x", "", "username not specified"},
		{"no password", "\x00alice\x00", "", "password not specified"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := srv.Start(MechanismPlain)
			if err != nil {
				t.Fatal(err)
			}
			reply, err := s.Step(context.Background(), []byte(tc.msg))
			if tc.user != "" {
				if err != nil || len(reply) != 0 || !s.Done() || s.Username() != tc.user {
					t.Fatalf("err=%v reply=%q done=%v user=%q", err, reply, s.Done(), s.Username())
				}
				if _, err := s.Step(context.Background(), []byte(tc.msg)); err == nil {
					t.Fatal("a second PLAIN message was accepted")
				}
				return
			}
			if !errors.Is(err, ErrAuthenticationFailed) || !strings.Contains(err.Error(), tc.wantErr) || s.Done() {
				t.Fatalf("err=%v done=%v, want %q", err, s.Done(), tc.wantErr)
			}
		})
	}
}

func TestPlainClients(t *testing.T) {
	users := PlainUsers{"admin": "admin-secret"}
	ctx := context.Background()
	// franz-go's PLAIN client.
	_, msg, err := plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism().Authenticate(ctx, "b:9092")
	if err != nil {
		t.Fatal(err)
	}
	s := &plainServer{verifier: users}
	if _, err := s.Step(ctx, msg); err != nil || s.Username() != "admin" {
		t.Fatalf("franz-go PLAIN: %v", err)
	}
	// Ours.
	c := &PlainClient{User: "admin", Password: "admin-secret"}
	msg, err = c.Start()
	if err != nil {
		t.Fatal(err)
	}
	s = &plainServer{verifier: users}
	reply, err := s.Step(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, done, err := c.Step(reply); !done || err != nil {
		t.Fatalf("done=%v err=%v", done, err)
	}
	if _, err := (&PlainClient{User: "a\x00b", Password: "x"}).Start(); err == nil {
		t.Fatal("NUL in user accepted")
	}
}

func TestNewServerChecksMechanisms(t *testing.T) {
	if _, err := NewServer([]string{"GSSAPI"}, PlainUsers{}, nil); !errors.Is(err, ErrUnsupportedMechanism) {
		t.Fatalf("GSSAPI: %v", err)
	}
	if _, err := NewServer([]string{MechanismPlain}, nil, nil); err == nil {
		t.Fatal("PLAIN without users accepted")
	}
	if _, err := NewServer([]string{MechanismScramSHA512}, nil, nil); err == nil {
		t.Fatal("SCRAM without a store accepted")
	}
	srv, err := NewServer([]string{MechanismPlain}, PlainUsers{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Start(MechanismScramSHA256); !errors.Is(err, ErrUnsupportedMechanism) {
		t.Fatalf("disabled mechanism started: %v", err)
	}
}

type failingStore struct{}

var errStoreDown = errors.New("metadata log unavailable at 10.0.0.1")

func (failingStore) VerifyPlain(context.Context, string, string) (bool, error) {
	return false, errStoreDown
}

func (failingStore) ScramCredential(context.Context, ScramMechanism, string) (ScramCredential, bool, error) {
	return ScramCredential{}, false, errStoreDown
}

// TestStoreErrorsStayInternal: a credential store failure fails the
// exchange with a generic message; the detail is only for the log.
func TestStoreErrorsStayInternal(t *testing.T) {
	srv, err := NewServer([]string{MechanismPlain, MechanismScramSHA256}, failingStore{}, failingStore{})
	if err != nil {
		t.Fatal(err)
	}
	for mech, msg := range map[string]string{MechanismPlain: "\x00a\x00b", MechanismScramSHA256: "n,,n=a,r=abc"} {
		s, _ := srv.Start(mech)
		_, err := s.Step(context.Background(), []byte(msg))
		if !errors.Is(err, ErrAuthenticationFailed) || !errors.Is(err, errStoreDown) || Cause(err) != errStoreDown {
			t.Fatalf("%s: err=%v", mech, err)
		}
		if strings.Contains(err.Error(), "10.0.0.1") {
			t.Fatalf("%s: internal detail sent to the client: %v", mech, err)
		}
	}
}
