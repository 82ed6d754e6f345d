package sasl

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
)

// PlainVerifier checks a PLAIN user name and password.
type PlainVerifier interface {
	// VerifyPlain reports whether password is user's password. A non-nil
	// error means the check itself failed (not a wrong password).
	VerifyPlain(ctx context.Context, user, password string) (bool, error)
}

// PlainUsers is a PlainVerifier backed by a fixed user -> password map, the
// user_<name>="<password>" options of Kafka's PlainLoginModule.
type PlainUsers map[string]string

// VerifyPlain compares in constant time. An unknown user is compared
// against a dummy password so the answer takes the same time either way.
func (u PlainUsers) VerifyPlain(_ context.Context, user, password string) (bool, error) {
	want, ok := u[user]
	// Hash both sides first: subtle.ConstantTimeCompare returns early on
	// a length difference, which would leak the stored password's length.
	got := sha256.Sum256([]byte(password))
	exp := sha256.Sum256([]byte(want))
	match := subtle.ConstantTimeCompare(got[:], exp[:]) == 1
	return ok && match, nil
}

// plainServer is the server side of RFC 4616: one message
// "authzid NUL authcid NUL passwd", no reply.
type plainServer struct {
	verifier PlainVerifier
	user     string
	done     bool
	used     bool
}

func (p *plainServer) Mechanism() string { return MechanismPlain }
func (p *plainServer) Done() bool        { return p.done }
func (p *plainServer) Username() string {
	if !p.done {
		return ""
	}
	return p.user
}

func (p *plainServer) Step(ctx context.Context, response []byte) ([]byte, error) {
	if p.used {
		return nil, failf("Authentication failed: unexpected SASL/PLAIN message after authentication")
	}
	p.used = true
	parts := bytes.Split(response, []byte{0})
	if len(parts) != 3 {
		return nil, failf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(parts))
	}
	authzid, user, pass := string(parts[0]), string(parts[1]), string(parts[2])
	if user == "" {
		return nil, failf("Authentication failed: username not specified")
	}
	if pass == "" {
		return nil, failf("Authentication failed: password not specified")
	}
	// Kafka has no impersonation: an authorization id must name the
	// authenticated user itself.
	if authzid != "" && authzid != user {
		return nil, failf("Authentication failed: Client requested an authorization id that is different from username")
	}
	ok, err := p.verifier.VerifyPlain(ctx, user, pass)
	if err != nil {
		return nil, internalFailure(MechanismPlain, err)
	}
	if !ok {
		return nil, failf("Authentication failed: Invalid username or password")
	}
	p.user, p.done = user, true
	return nil, nil
}

// PlainClient is the client side of PLAIN for inter-broker connections.
type PlainClient struct {
	// Authzid is normally empty (Kafka refuses any other than User).
	Authzid, User, Password string
	started                 bool
}

func (c *PlainClient) Mechanism() string { return MechanismPlain }

func (c *PlainClient) Start() ([]byte, error) {
	if c.User == "" || c.Password == "" {
		return nil, errors.New("SASL/PLAIN: user and password must be non-empty")
	}
	if bytes.ContainsRune([]byte(c.Authzid+c.User+c.Password), 0) {
		return nil, errors.New("SASL/PLAIN: user, password and authzid must not contain NUL")
	}
	c.started = true
	return []byte(c.Authzid + "\x00" + c.User + "\x00" + c.Password), nil
}

// Step accepts the server's (empty) answer: PLAIN is done after one message.
func (c *PlainClient) Step([]byte) ([]byte, bool, error) {
	if !c.started {
		return nil, false, errors.New("SASL/PLAIN: Step before Start")
	}
	return nil, true, nil
}
