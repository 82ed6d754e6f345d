package sasl

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestScramRFC7677 replays the SCRAM-SHA-256 example of RFC 7677 section 3
// against the server and checks every byte it answers.
func TestScramRFC7677(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred, err := DeriveScramCredential(SHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	store := ScramCredentials{}
	store.Add("user", cred)
	s := newScramServer(SHA256, store)
	s.serverNonce = func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" }
	ctx := context.Background()

	first, err := s.Step(ctx, []byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; string(first) != want {
		t.Fatalf("server-first-message\n got %s\nwant %s", first, want)
	}
	final, err := s.Step(ctx, []byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; string(final) != want {
		t.Fatalf("server-final-message\n got %s\nwant %s", final, want)
	}
	if !s.Done() || s.Username() != "user" {
		t.Fatalf("Done=%v Username=%q", s.Done(), s.Username())
	}

	// The client side must produce RFC 7677's client-final-message too.
	c := &ScramClient{Mech: SHA256, User: "user", Password: "pencil", Nonce: "rOprNGfwEbeRWgbNEkqO"}
	if m, err := c.Start(); err != nil || string(m) != "n,,n=user,r=rOprNGfwEbeRWgbNEkqO" {
		t.Fatalf("client-first %q %v", m, err)
	}
	m, done, err := c.Step(first)
	if err != nil || done || string(m) != "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=" {
		t.Fatalf("client-final %q done=%v %v", m, done, err)
	}
	if _, done, err := c.Step(final); err != nil || !done {
		t.Fatalf("client verify done=%v %v", done, err)
	}
}

func scramStore(t *testing.T) ScramCredentials {
	t.Helper()
	store := ScramCredentials{}
	for _, m := range []ScramMechanism{SHA256, SHA512} {
		for user, pass := range map[string]string{"alice": "alice-secret", "a,b=c": "odd-secret"} {
			c, err := DeriveScramCredential(m, pass, nil, 4096)
			if err != nil {
				t.Fatal(err)
			}
			store.Add(user, c)
		}
	}
	return store
}

// TestScramServerWithFranzGo drives franz-go's SCRAM client sessions
// against the server in memory.
func TestScramServerWithFranzGo(t *testing.T) {
	store := scramStore(t)
	srv, err := NewServer([]string{MechanismScramSHA256, MechanismScramSHA512}, nil, store)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		auth    scram.Auth
		wantErr string // "" = success
	}{
		{"ok", scram.Auth{User: "alice", Pass: "alice-secret"}, ""},
		{"escaped name", scram.Auth{User: "a,b=c", Pass: "odd-secret"}, ""},
		{"authzid equal to user", scram.Auth{Zid: "alice", User: "alice", Pass: "alice-secret"}, ""},
		{"wrong password", scram.Auth{User: "alice", Pass: "nope"}, "invalid credentials"},
		{"unknown user", scram.Auth{User: "mallory", Pass: "alice-secret"}, "invalid credentials"},
		{"authzid other user", scram.Auth{Zid: "admin", User: "alice", Pass: "alice-secret"}, "authorization id"},
		// A store without tokens knows no token id: the user's own
		// password does not authenticate it as a token.
		{"tokenauth extension", scram.Auth{User: "alice", Pass: "alice-secret", IsToken: true}, "invalid credentials"},
	}
	for _, tc := range cases {
		for _, name := range []string{MechanismScramSHA256, MechanismScramSHA512} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				auth := tc.auth
				fn := func(context.Context) (scram.Auth, error) { return auth, nil }
				mech := scram.Sha256(fn)
				if name == MechanismScramSHA512 {
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
				var serverErr error
				for i := 0; i < 4; i++ {
					var challenge []byte
					challenge, serverErr = server.Step(ctx, msg)
					if serverErr != nil {
						break
					}
					done, next, err := client.Challenge(challenge)
					if err != nil {
						t.Fatalf("franz-go client rejected the server: %v", err)
					}
					if done {
						break
					}
					msg = next
				}
				if tc.wantErr == "" {
					if serverErr != nil || !server.Done() || server.Username() != auth.User {
						t.Fatalf("err=%v done=%v user=%q", serverErr, server.Done(), server.Username())
					}
					return
				}
				if serverErr == nil || !strings.Contains(serverErr.Error(), tc.wantErr) || !errors.Is(serverErr, ErrAuthenticationFailed) {
					t.Fatalf("err=%v, want one containing %q", serverErr, tc.wantErr)
				}
				if server.Done() || server.Username() != "" {
					t.Fatal("failed session reports a user")
				}
			})
		}
	}
}

// TestScramClientAgainstServer checks the inter-broker client against the
// server, and that it rejects a server that does not know the password.
func TestScramClientAgainstServer(t *testing.T) {
	store := scramStore(t)
	ctx := context.Background()
	run := func(c *ScramClient, server ServerSession) error {
		msg, err := c.Start()
		if err != nil {
			return err
		}
		for {
			ch, err := server.Step(ctx, msg)
			if err != nil {
				return err
			}
			resp, done, err := c.Step(ch)
			if err != nil || done {
				return err
			}
			msg = resp
		}
	}
	for _, m := range []ScramMechanism{SHA256, SHA512} {
		if err := run(&ScramClient{Mech: m, User: "alice", Password: "alice-secret"}, newScramServer(m, store)); err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		if err := run(&ScramClient{Mech: m, User: "alice", Password: "bad"}, newScramServer(m, store)); !errors.Is(err, ErrAuthenticationFailed) {
			t.Fatalf("%s wrong password: %v", m.Name(), err)
		}
	}

	// A server holding a different ServerKey (an impostor that learned
	// StoredKey only) must fail the client's check of v=.
	c := &ScramClient{Mech: SHA256, User: "alice", Password: "alice-secret"}
	impostor := ScramCredentials{}
	real, _, _ := store.ScramCredential(ctx, SHA256, "alice")
	real.ServerKey = make([]byte, len(real.ServerKey))
	impostor.Add("alice", real)
	if err := run(c, newScramServer(SHA256, impostor)); err == nil || !strings.Contains(err.Error(), "server signature") {
		t.Fatalf("impostor server accepted: %v", err)
	}
}

func TestScramServerRejectsMalformed(t *testing.T) {
	store := scramStore(t)
	ctx := context.Background()
	firsts := []string{
		"", "n", "p=tls-unique,,n=alice,r=abc", "x,,n=alice,r=abc", "n,,m=ext,n=alice,r=abc",
		"n,,r=abc,n=alice", "n,,n=alice", "n,,n=alice,r=", "n,,n=al=ice,r=abc", "n,b=x,n=alice,r=abc",
		"n,,n=alice,r=a" + strings.Repeat("b", maxScramMessage),
	}
	for _, f := range firsts {
		s := newScramServer(SHA256, store)
		if _, err := s.Step(ctx, []byte(f)); !errors.Is(err, ErrAuthenticationFailed) {
			t.Errorf("client-first %.40q: err=%v", f, err)
		}
	}
	finals := []string{
		"", "c=biws,r=NONCE", "c=eSws,r=NONCE,p=AAAA", "c=biws,r=other,p=AAAA", "c=biws,r=NONCE,p=!!",
		"c=biws,r=NONCE,p=" + base64.StdEncoding.EncodeToString(make([]byte, 32)),
	}
	for _, f := range finals {
		s := newScramServer(SHA256, store)
		s.serverNonce = func() string { return "srv" }
		if _, err := s.Step(ctx, []byte("n,,n=alice,r=cli")); err != nil {
			t.Fatal(err)
		}
		f = strings.ReplaceAll(f, "NONCE", "clisrv")
		if _, err := s.Step(ctx, []byte(f)); !errors.Is(err, ErrAuthenticationFailed) || s.Done() {
			t.Errorf("client-final %q: err=%v", f, err)
		}
	}
}

func TestScramUnknownUserSaltIsStable(t *testing.T) {
	ctx := context.Background()
	salt := func() string {
		s := newScramServer(SHA512, ScramCredentials{})
		first, err := s.Step(ctx, []byte("n,,n=ghost,r=abc"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(string(first), ",")[1]
	}
	if a, b := salt(), salt(); a != b {
		t.Fatalf("fake salt changes between attempts: %s vs %s", a, b)
	}
}

func TestScramClientNeedsMechanism(t *testing.T) {
	if _, err := (&ScramClient{User: "a", Password: "b"}).Start(); err == nil {
		t.Fatal("zero mechanism accepted")
	}
}

// TestScramLibrdkafkaNonce: librdkafka's client-final r= is its client
// nonce followed by the whole combined nonce, which Kafka accepts.
func TestScramLibrdkafkaNonce(t *testing.T) {
	store := scramStore(t)
	ctx := context.Background()
	s := newScramServer(SHA256, store)
	first, err := s.Step(ctx, []byte("n,,n=alice,r=cli"))
	if err != nil {
		t.Fatal(err)
	}
	combined := strings.TrimPrefix(strings.Split(string(first), ",")[0], "r=")
	c := &ScramClient{Mech: SHA256, User: "alice", Password: "alice-secret", Nonce: "cli"}
	if _, err := c.Start(); err != nil {
		t.Fatal(err)
	}
	final, _, err := c.Step(first)
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite r= the librdkafka way and recompute the proof over it.
	doubled := strings.Replace(string(final), "r="+combined, "r=cli"+combined, 1)
	doubled = doubled[:strings.LastIndex(doubled, ",p=")]
	cred, _, _ := store.ScramCredential(ctx, SHA256, "alice")
	sp, _ := SHA256.SaltedPassword("alice-secret", cred.Salt, cred.Iterations)
	clientKey := SHA256.hmac(sp, []byte("Client Key"))
	proof := SHA256.hmac(cred.StoredKey, []byte("n=alice,r=cli,"+string(first)+","+doubled))
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	if _, err := s.Step(ctx, []byte(doubled+",p="+base64.StdEncoding.EncodeToString(proof))); err != nil || !s.Done() {
		t.Fatalf("librdkafka-style nonce refused: %v", err)
	}
}
