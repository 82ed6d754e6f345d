package sasl

import (
	"context"
	"errors"
	"fmt"
)

// Mechanism names as they appear in SaslHandshake and sasl.enabled.mechanisms.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// ServerSession is the server half of one SASL exchange. Every mechanism
// here is client-first: the first Step gets the client's initial response.
type ServerSession interface {
	// Mechanism is the SASL mechanism name, e.g. "SCRAM-SHA-256".
	Mechanism() string
	// Step consumes the client's next message and returns the server's
	// reply (possibly empty). After a nil error Done tells whether the
	// exchange has finished successfully. A non-nil error ends the exchange:
	// authentication failed and the connection should be closed after the
	// error is reported. Errors wrap ErrAuthenticationFailed and their text
	// is safe to send to the client.
	Step(ctx context.Context, response []byte) (challenge []byte, err error)
	// Done reports whether the client is authenticated.
	Done() bool
	// Username is the authenticated user name (the Kafka principal name
	// "User:<Username>") once Done is true, otherwise "".
	Username() string
}

// ClientSession is the client half of one SASL exchange.
type ClientSession interface {
	// Mechanism is the SASL mechanism name.
	Mechanism() string
	// Start returns the client's initial response.
	Start() ([]byte, error)
	// Step consumes the server's challenge and returns the next client
	// message. done is true once the server has been verified and nothing
	// further is to be sent.
	Step(challenge []byte) (response []byte, done bool, err error)
}

// ErrAuthenticationFailed is wrapped by every error a ServerSession returns:
// the broker answers it with SASL_AUTHENTICATION_FAILED.
var ErrAuthenticationFailed = errors.New("authentication failed")

// ErrUnsupportedMechanism is returned by Server.Start for a mechanism that is
// not enabled: the broker answers UNSUPPORTED_SASL_MECHANISM.
var ErrUnsupportedMechanism = errors.New("unsupported SASL mechanism")

// authError is an authentication failure whose message is sent to the
// client; it never contains a password, key or internal detail. cause,
// when set, is the internal error for the broker's log (see Cause).
type authError struct {
	msg   string
	cause error
}

func (e *authError) Error() string { return e.msg }
func (e *authError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrAuthenticationFailed}
	}
	return []error{ErrAuthenticationFailed, e.cause}
}

// Cause returns the internal error behind an authentication failure (a
// credential store error, say) for logging, or nil. It is never sent to
// the client.
func Cause(err error) error {
	var ae *authError
	if errors.As(err, &ae) {
		return ae.cause
	}
	return nil
}

// internalFailure hides a credential lookup error from the client, as
// Kafka does, while keeping it for the log.
func internalFailure(mechanism string, cause error) error {
	return &authError{msg: "Authentication failed during authentication due to an internal error with SASL mechanism " + mechanism, cause: cause}
}

func failf(format string, args ...any) error {
	return &authError{msg: fmt.Sprintf(format, args...)}
}

// invalidCredentials is Kafka's message for a wrong password or unknown
// user: one message for both so a client cannot probe which users exist.
func invalidCredentials(mechanism string) error {
	return failf("Authentication failed during authentication due to invalid credentials with SASL mechanism %s", mechanism)
}

// Server starts server sessions for the enabled mechanisms
// (sasl.enabled.mechanisms).
type Server struct {
	// Enabled lists the mechanism names offered, in the order reported to
	// clients in SaslHandshake responses.
	Enabled []string
	// Plain checks PLAIN passwords; required when PLAIN is enabled.
	Plain PlainVerifier
	// Scram looks up SCRAM credentials; required when a SCRAM mechanism is
	// enabled.
	Scram CredentialStore
}

// NewServer checks that every enabled mechanism is known and has its
// credential source.
func NewServer(enabled []string, plain PlainVerifier, scram CredentialStore) (*Server, error) {
	for _, m := range enabled {
		switch m {
		case MechanismPlain:
			if plain == nil {
				return nil, fmt.Errorf("sasl.enabled.mechanisms has PLAIN but no PLAIN users are configured (sasl.jaas.config with user_<name> options)")
			}
		case MechanismScramSHA256, MechanismScramSHA512:
			if scram == nil {
				return nil, fmt.Errorf("sasl.enabled.mechanisms has %s but no SCRAM credential store is configured", m)
			}
		default:
			return nil, fmt.Errorf("sasl.enabled.mechanisms: %w %q (supported: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", ErrUnsupportedMechanism, m)
		}
	}
	return &Server{Enabled: append([]string(nil), enabled...), Plain: plain, Scram: scram}, nil
}

// Start begins a server exchange for the mechanism the client named in its
// SaslHandshake request.
func (s *Server) Start(mechanism string) (ServerSession, error) {
	enabled := false
	for _, m := range s.Enabled {
		if m == mechanism {
			enabled = true
		}
	}
	if !enabled {
		return nil, fmt.Errorf("%w %q", ErrUnsupportedMechanism, mechanism)
	}
	switch mechanism {
	case MechanismPlain:
		return &plainServer{verifier: s.Plain}, nil
	case MechanismScramSHA256:
		return newScramServer(SHA256, s.Scram), nil
	case MechanismScramSHA512:
		return newScramServer(SHA512, s.Scram), nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnsupportedMechanism, mechanism)
}
