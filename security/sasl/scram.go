package sasl

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// maxScramMessage bounds a client SCRAM message; real ones are ~200 bytes.
const maxScramMessage = 4096

// scramServer is the RFC 5802 server: client-first -> server-first,
// client-final -> server-final.
type scramServer struct {
	mech  ScramMechanism
	store CredentialStore
	step  int

	gs2Header       string
	clientFirstBare string
	serverFirst     string
	nonce           string // client nonce + server nonce
	user            string
	cred            ScramCredential
	// unknownUser is set when the user has no credential: the exchange
	// continues with a fake one so the failure shows at the same step as a
	// wrong password (RFC 5802 section 5.1 recommends this).
	unknownUser bool
	done        bool
	// token is set when the client asked for delegation token
	// authentication (the tokenauth extension): user is then the token
	// id, and owner the principal name it authenticates as.
	token       bool
	owner       string
	tokenExpiry time.Time
	// serverNonce makes the server's part of the nonce; tests replace it
	// to replay RFC 7677's example.
	serverNonce func() string
}

func newScramServer(m ScramMechanism, store CredentialStore) *scramServer {
	return &scramServer{mech: m, store: store, serverNonce: randomBase36}
}

func (s *scramServer) Mechanism() string { return s.mech.name }
func (s *scramServer) Done() bool        { return s.done }
func (s *scramServer) Username() string {
	switch {
	case !s.done:
		return ""
	case s.token:
		return s.owner
	}
	return s.user
}

// TokenAuthenticated implements TokenSession.
func (s *scramServer) TokenAuthenticated() bool { return s.done && s.token }

// CredentialExpiry implements TokenSession.
func (s *scramServer) CredentialExpiry() time.Time {
	if !s.done || !s.token {
		return time.Time{}
	}
	return s.tokenExpiry
}

func (s *scramServer) Step(ctx context.Context, response []byte) ([]byte, error) {
	if len(response) > maxScramMessage {
		return nil, failf("Invalid %s message: %d bytes is too long", s.mech.name, len(response))
	}
	step := s.step
	s.step++
	switch step {
	case 0:
		return s.clientFirst(ctx, string(response))
	case 1:
		return s.clientFinal(string(response))
	}
	return nil, failf("Authentication failed: unexpected %s message after the exchange ended", s.mech.name)
}

// clientFirst handles gs2-header client-first-message-bare.
func (s *scramServer) clientFirst(ctx context.Context, msg string) ([]byte, error) {
	// gs2-header = gs2-cbind-flag "," [ authzid ] ","
	cbind, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return nil, failf("Invalid %s client-first-message: no GS2 header", s.mech.name)
	}
	switch {
	case cbind == "n", cbind == "y":
		// No channel binding; "y" means the client could but thinks we
		// cannot, which is true: no -PLUS mechanism is offered.
	case strings.HasPrefix(cbind, "p="):
		return nil, failf("Invalid %s client-first-message: channel binding is not supported", s.mech.name)
	default:
		return nil, failf("Invalid %s client-first-message: bad GS2 channel binding flag %q", s.mech.name, cbind)
	}
	authzPart, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, failf("Invalid %s client-first-message: truncated GS2 header", s.mech.name)
	}
	authzid := ""
	if authzPart != "" {
		enc, ok := strings.CutPrefix(authzPart, "a=")
		if !ok {
			return nil, failf("Invalid %s client-first-message: bad authzid %q", s.mech.name, authzPart)
		}
		var err error
		if authzid, err = decodeSaslName(enc); err != nil {
			return nil, failf("Invalid %s client-first-message: %v", s.mech.name, err)
		}
	}
	s.gs2Header = cbind + "," + authzPart + ","
	s.clientFirstBare = bare

	attrs := strings.Split(bare, ",")
	if strings.HasPrefix(attrs[0], "m=") {
		return nil, failf("Invalid %s client-first-message: mandatory extension not supported", s.mech.name)
	}
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, failf("Invalid %s client-first-message: expected n=<user>,r=<nonce>", s.mech.name)
	}
	user, err := decodeSaslName(attrs[0][2:])
	if err != nil || user == "" {
		return nil, failf("Invalid %s client-first-message: bad username", s.mech.name)
	}
	clientNonce := attrs[1][2:]
	if !validNonce(clientNonce) {
		return nil, failf("Invalid %s client-first-message: bad nonce", s.mech.name)
	}
	// Kafka knows one extension, tokenauth (delegation tokens, KIP-48):
	// with tokenauth=true the user name is a token id and the password
	// the token's HMAC. Any other extension is refused, as Kafka's
	// ScramSaslServer refuses extensions it does not support.
	token, err := s.extensions(attrs[2:])
	if err != nil {
		return nil, err
	}
	if authzid != "" && authzid != user {
		return nil, failf("Authentication failed: Client requested an authorization id that is different from username")
	}
	s.user = user

	var cred ScramCredential
	var found bool
	if token {
		cred, found, err = s.tokenCredential(ctx, user)
	} else {
		cred, found, err = s.store.ScramCredential(ctx, s.mech, user)
	}
	if err != nil {
		return nil, internalFailure(s.mech.name, err)
	}
	if !found {
		s.unknownUser = true
		cred = s.fakeCredential()
	}
	if cred.Iterations < MinScramIterations {
		return nil, failf("Authentication failed: stored %s credential has %d iterations, less than the minimum %d", s.mech.name, cred.Iterations, MinScramIterations)
	}
	s.cred = cred
	s.nonce = clientNonce + s.serverNonce()
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(cred.Iterations)
	return []byte(s.serverFirst), nil
}

// extensions parses the client-first-message's extensions (RFC 5802
// section 5.1, "name=value") and reports whether tokenauth is true.
func (s *scramServer) extensions(exts []string) (token bool, err error) {
	for _, ext := range exts {
		name, value, ok := strings.Cut(ext, "=")
		if !ok || name != TokenAuthExtension {
			return false, failf("Authentication failed: unsupported %s extension %q", s.mech.name, name)
		}
		// Kafka reads the value with equalsIgnoreCase("true").
		token = strings.EqualFold(value, "true")
	}
	return token, nil
}

// tokenCredential looks the token up when the store can (TokenStore).
// An unknown or expired token continues with a fake credential, like an
// unknown user, so it fails at the same step as a wrong HMAC.
func (s *scramServer) tokenCredential(ctx context.Context, tokenID string) (ScramCredential, bool, error) {
	ts, ok := s.store.(TokenStore)
	if !ok {
		return ScramCredential{}, false, nil
	}
	tc, found, err := ts.DelegationTokenCredential(ctx, s.mech, tokenID)
	if err != nil || !found {
		return ScramCredential{}, false, err
	}
	if !tc.Expiry.IsZero() && !time.Now().Before(tc.Expiry) {
		return ScramCredential{}, false, nil
	}
	s.token, s.owner, s.tokenExpiry = true, tc.Owner, tc.Expiry
	return tc.Credential, true, nil
}

// fakeSaltKey makes fake salts stable per process: a real user's salt does
// not change between attempts, so a fake one must not either, or two probes
// would reveal that a user does not exist.
var fakeSaltKey = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

// fakeCredential stands in for an unknown user's credential. Its keys are
// random, so no proof can match; the salt is stable for the user.
func (s *scramServer) fakeCredential() ScramCredential {
	size := s.mech.newHash().Size()
	stored, server := make([]byte, size), make([]byte, size)
	rand.Read(stored)
	rand.Read(server)
	// Shaped like a Kafka-made salt (130 bits in base 36) so its form
	// does not give it away either.
	sum := s.mech.hmac(fakeSaltKey, []byte(s.mech.name+"\x00"+s.user))
	n := new(big.Int).SetBytes(sum[:17])
	n.Rsh(n, 6)
	return ScramCredential{Mechanism: s.mech, Salt: []byte(n.Text(36)), Iterations: DefaultScramIterations, StoredKey: stored, ServerKey: server}
}

// clientFinal handles c=<cbind>,r=<nonce>[,ext],p=<proof>.
func (s *scramServer) clientFinal(msg string) ([]byte, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, failf("Invalid %s client-final-message: no proof", s.mech.name)
	}
	withoutProof, proofB64 := msg[:i], msg[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, failf("Invalid %s client-final-message: expected c=...,r=...", s.mech.name)
	}
	cbind, err := base64.StdEncoding.DecodeString(attrs[0][2:])
	if err != nil || string(cbind) != s.gs2Header {
		return nil, failf("Invalid %s client-final-message: channel binding does not match the GS2 header", s.mech.name)
	}
	// RFC 5802 wants r= to equal the combined nonce, but librdkafka
	// sends its own nonce again in front of it; Kafka accepts any r=
	// ending with the combined nonce, and so must we. Freshness holds:
	// the server's random part is still there and the proof covers the
	// message as sent.
	if !strings.HasSuffix(attrs[1][2:], s.nonce) {
		return nil, failf("Invalid %s client-final-message: nonce does not match", s.mech.name)
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != len(s.cred.StoredKey) {
		return nil, failf("Invalid %s client-final-message: bad proof", s.mech.name)
	}
	authMessage := []byte(s.clientFirstBare + "," + s.serverFirst + "," + withoutProof)
	// ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage); the client
	// knew the password iff H(ClientKey) == StoredKey.
	clientKey := s.mech.hmac(s.cred.StoredKey, authMessage)
	for j := range clientKey {
		clientKey[j] ^= proof[j]
	}
	if subtle.ConstantTimeCompare(s.mech.h(clientKey), s.cred.StoredKey) != 1 || s.unknownUser {
		return nil, invalidCredentials(s.mech.name)
	}
	s.done = true
	return []byte("v=" + base64.StdEncoding.EncodeToString(s.mech.hmac(s.cred.ServerKey, authMessage))), nil
}

// decodeSaslName undoes RFC 5802's escaping of ',' and '=' in names.
func decodeSaslName(s string) (string, error) {
	if strings.Contains(strings.NewReplacer("=2C", "", "=3D", "").Replace(s), "=") {
		return "", fmt.Errorf("invalid escaped name %q", s)
	}
	return strings.NewReplacer("=2C", ",", "=3D", "=").Replace(s), nil
}

var saslNameEscaper = strings.NewReplacer("=", "=3D", ",", "=2C")

// validNonce: printable ASCII except ',' (RFC 5802 "printable").
func validNonce(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// ScramClient is the client side of SCRAM for inter-broker connections.
type ScramClient struct {
	Mech     ScramMechanism
	User     string
	Password string
	// Nonce is the client nonce; empty means random.
	Nonce string
	// Token authenticates with a delegation token (the tokenauth=true
	// extension): User is the token id, Password its HMAC in base64.
	Token bool

	step               int
	clientFirstBare    string
	expectedServerSign []byte
}

func (c *ScramClient) Mechanism() string { return c.Mech.name }

func (c *ScramClient) Start() ([]byte, error) {
	if c.Mech.newHash == nil {
		return nil, fmt.Errorf("SCRAM client: no mechanism (use sasl.SHA256 or sasl.SHA512)")
	}
	if c.User == "" || c.Password == "" {
		return nil, fmt.Errorf("%s: user and password must be non-empty", c.Mech.name)
	}
	if c.Nonce == "" {
		c.Nonce = randomBase36()
	}
	if !validNonce(c.Nonce) {
		return nil, fmt.Errorf("%s: invalid client nonce", c.Mech.name)
	}
	c.clientFirstBare = "n=" + saslNameEscaper.Replace(c.User) + ",r=" + c.Nonce
	if c.Token {
		c.clientFirstBare += "," + TokenAuthExtension + "=true"
	}
	return []byte("n,," + c.clientFirstBare), nil
}

func (c *ScramClient) Step(challenge []byte) ([]byte, bool, error) {
	step := c.step
	c.step++
	switch step {
	case 0:
		resp, err := c.serverFirst(string(challenge))
		return resp, false, err
	case 1:
		msg := string(challenge)
		if e, ok := strings.CutPrefix(msg, "e="); ok {
			return nil, false, fmt.Errorf("%s: server error %q", c.Mech.name, e)
		}
		v, ok := strings.CutPrefix(strings.Split(msg, ",")[0], "v=")
		if !ok {
			return nil, false, fmt.Errorf("%s: bad server-final-message", c.Mech.name)
		}
		sig, err := base64.StdEncoding.DecodeString(v)
		if err != nil || !hmac.Equal(sig, c.expectedServerSign) {
			return nil, false, fmt.Errorf("%s: server signature does not verify: the server does not know the password", c.Mech.name)
		}
		return nil, true, nil
	}
	return nil, false, fmt.Errorf("%s: exchange already finished", c.Mech.name)
}

func (c *ScramClient) serverFirst(msg string) ([]byte, error) {
	attrs := strings.Split(msg, ",")
	if len(attrs) < 3 || !strings.HasPrefix(attrs[0], "r=") || !strings.HasPrefix(attrs[1], "s=") || !strings.HasPrefix(attrs[2], "i=") {
		return nil, fmt.Errorf("%s: bad server-first-message", c.Mech.name)
	}
	nonce := attrs[0][2:]
	if !strings.HasPrefix(nonce, c.Nonce) || len(nonce) == len(c.Nonce) || !validNonce(nonce) {
		return nil, fmt.Errorf("%s: server nonce does not extend the client nonce", c.Mech.name)
	}
	salt, err := base64.StdEncoding.DecodeString(attrs[1][2:])
	if err != nil {
		return nil, fmt.Errorf("%s: bad salt: %w", c.Mech.name, err)
	}
	iterations, err := strconv.Atoi(attrs[2][2:])
	if err != nil {
		return nil, fmt.Errorf("%s: bad iteration count: %w", c.Mech.name, err)
	}
	// The upper bound keeps a hostile server from pinning a CPU in PBKDF2.
	if iterations < MinScramIterations || iterations > MaxScramIterations {
		return nil, fmt.Errorf("%s: iteration count %d outside [%d, %d]", c.Mech.name, iterations, MinScramIterations, MaxScramIterations)
	}
	sp, err := c.Mech.SaltedPassword(c.Password, salt, iterations)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Mech.name, err)
	}
	clientKey := c.Mech.hmac(sp, []byte("Client Key"))
	storedKey := c.Mech.h(clientKey)
	withoutProof := "c=" + base64.StdEncoding.EncodeToString([]byte("n,,")) + ",r=" + nonce
	authMessage := []byte(c.clientFirstBare + "," + msg + "," + withoutProof)
	proof := c.Mech.hmac(storedKey, authMessage)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	c.expectedServerSign = c.Mech.hmac(c.Mech.hmac(sp, []byte("Server Key")), authMessage)
	return []byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)), nil
}
