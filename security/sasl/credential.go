package sasl

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"math/big"
	"strconv"
	"strings"
)

// ScramMechanism is one SCRAM hash family as Kafka names and numbers it.
type ScramMechanism struct {
	name string
	// Type is Kafka's mechanism code (UserScramCredentialRecord.Mechanism,
	// DescribeUserScramCredentials): 1 for SHA-256, 2 for SHA-512.
	Type    int8
	newHash func() hash.Hash
}

var (
	SHA256 = ScramMechanism{name: MechanismScramSHA256, Type: 1, newHash: sha256.New}
	SHA512 = ScramMechanism{name: MechanismScramSHA512, Type: 2, newHash: sha512.New}
)

// Kafka's bounds on the iteration count of stored SCRAM credentials.
const (
	MinScramIterations     = 4096
	MaxScramIterations     = 16384
	DefaultScramIterations = 4096
)

// Name is the SASL mechanism name, e.g. "SCRAM-SHA-256".
func (m ScramMechanism) Name() string { return m.name }

// ScramMechanismByName returns the mechanism for "SCRAM-SHA-256" or
// "SCRAM-SHA-512".
func ScramMechanismByName(name string) (ScramMechanism, bool) {
	switch name {
	case MechanismScramSHA256:
		return SHA256, true
	case MechanismScramSHA512:
		return SHA512, true
	}
	return ScramMechanism{}, false
}

// ScramMechanismByType returns the mechanism for Kafka's type code.
func ScramMechanismByType(t int8) (ScramMechanism, bool) {
	switch t {
	case SHA256.Type:
		return SHA256, true
	case SHA512.Type:
		return SHA512, true
	}
	return ScramMechanism{}, false
}

// ScramCredential is what Kafka stores per user and mechanism (KIP-554
// UserScramCredentialRecord): never the password, only the salt, the
// iteration count and the two keys derived from the salted password.
type ScramCredential struct {
	Mechanism  ScramMechanism
	Salt       []byte
	Iterations int
	StoredKey  []byte // H(HMAC(SaltedPassword, "Client Key"))
	ServerKey  []byte // HMAC(SaltedPassword, "Server Key")
}

// CredentialStore looks up SCRAM credentials; the broker backs it with its
// metadata log. ok is false for an unknown user.
type CredentialStore interface {
	ScramCredential(ctx context.Context, mechanism ScramMechanism, user string) (cred ScramCredential, ok bool, err error)
}

// ScramCredentials is an in-memory CredentialStore keyed by mechanism name
// and user.
type ScramCredentials map[string]map[string]ScramCredential

// ScramCredential implements CredentialStore.
func (s ScramCredentials) ScramCredential(_ context.Context, m ScramMechanism, user string) (ScramCredential, bool, error) {
	c, ok := s[m.name][user]
	return c, ok, nil
}

// Add stores c for user under c's mechanism.
func (s ScramCredentials) Add(user string, c ScramCredential) {
	if s[c.Mechanism.name] == nil {
		s[c.Mechanism.name] = map[string]ScramCredential{}
	}
	s[c.Mechanism.name][user] = c
}

func (m ScramMechanism) hmac(key, data []byte) []byte {
	mac := hmac.New(m.newHash, key)
	mac.Write(data)
	return mac.Sum(nil)
}

func (m ScramMechanism) h(data []byte) []byte {
	h := m.newHash()
	h.Write(data)
	return h.Sum(nil)
}

// SaltedPassword is RFC 5802's Hi(Normalize(password), salt, i), i.e.
// PBKDF2 with HMAC-H. Like Kafka, no SASLprep normalisation is applied.
func (m ScramMechanism) SaltedPassword(password string, salt []byte, iterations int) ([]byte, error) {
	return pbkdf2.Key(m.newHash, password, salt, iterations, m.newHash().Size())
}

// CredentialFromSaltedPassword derives StoredKey and ServerKey from a salted
// password (the kafka-storage "saltedpassword=" form).
func (m ScramMechanism) CredentialFromSaltedPassword(saltedPassword, salt []byte, iterations int) (ScramCredential, error) {
	if err := checkIterations(m, iterations); err != nil {
		return ScramCredential{}, err
	}
	clientKey := m.hmac(saltedPassword, []byte("Client Key"))
	return ScramCredential{
		Mechanism:  m,
		Salt:       append([]byte(nil), salt...),
		Iterations: iterations,
		StoredKey:  m.h(clientKey),
		ServerKey:  m.hmac(saltedPassword, []byte("Server Key")),
	}, nil
}

// DeriveScramCredential computes the credential Kafka stores for password.
// A nil salt means a fresh random one, generated as Kafka's ScramFormatter
// does (a 130-bit random number written in base 36).
func DeriveScramCredential(m ScramMechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	if err := checkIterations(m, iterations); err != nil {
		return ScramCredential{}, err
	}
	if salt == nil {
		salt = []byte(randomBase36())
	}
	sp, err := m.SaltedPassword(password, salt, iterations)
	if err != nil {
		return ScramCredential{}, fmt.Errorf("%s: deriving salted password: %w", m.name, err)
	}
	return m.CredentialFromSaltedPassword(sp, salt, iterations)
}

func checkIterations(m ScramMechanism, iterations int) error {
	if iterations < MinScramIterations {
		return fmt.Errorf("the 'iterations' value must be >= %d for %s, got %d", MinScramIterations, m.name, iterations)
	}
	if iterations > MaxScramIterations {
		return fmt.Errorf("the 'iterations' value must be <= %d for %s, got %d", MaxScramIterations, m.name, iterations)
	}
	return nil
}

// randomBase36 is Kafka's secureRandomString: 130 random bits in base 36,
// used for salts and server nonces (printable, never contains ',').
func randomBase36() string {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 130))
	if err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // crypto/rand does not fail on supported platforms
	}
	return n.Text(36)
}

// ParseAddScram parses one argument of kafka-storage format --add-scram:
//
//	SCRAM-SHA-256=[name=alice,password=alice-secret]
//	SCRAM-SHA-512=[name=alice,iterations=8192,salt="MWx2...",saltedpassword="mT0y..."]
//
// salt and saltedpassword are base64; iterations default to 4096; without a
// salt a random one is made. It returns the user name and the credential.
func ParseAddScram(arg string) (user string, cred ScramCredential, err error) {
	arg = strings.TrimSpace(arg)
	eq := strings.IndexByte(arg, '=')
	if eq < 0 {
		return "", ScramCredential{}, fmt.Errorf("failed to find equals sign in SCRAM argument %q", arg)
	}
	mechName, body := arg[:eq], arg[eq+1:]
	m, ok := ScramMechanismByName(mechName)
	if !ok {
		return "", ScramCredential{}, fmt.Errorf("the add-scram mechanism %s is not supported", mechName)
	}
	if !strings.HasPrefix(body, "[") || !strings.HasSuffix(body, "]") {
		return "", ScramCredential{}, fmt.Errorf("SCRAM argument %q: expected configuration in [ ]", arg)
	}
	fields := map[string]string{}
	for _, comp := range strings.Split(body[1:len(body)-1], ",") {
		k, v, found := strings.Cut(comp, "=")
		if !found {
			return "", ScramCredential{}, fmt.Errorf("no equals sign found in SCRAM component %q", comp)
		}
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		fields[k] = v
	}
	take := func(k string) (string, bool) {
		v, ok := fields[k]
		delete(fields, k)
		return v, ok
	}
	user, ok = take("name")
	if !ok {
		return "", ScramCredential{}, fmt.Errorf("you must supply 'name' to add-scram")
	}
	var salt []byte
	if s, ok := take("salt"); ok {
		if salt, err = base64.StdEncoding.DecodeString(s); err != nil {
			return "", ScramCredential{}, fmt.Errorf("failed to decode given salt %q: %w", s, err)
		}
	}
	iterations := DefaultScramIterations
	if s, ok := take("iterations"); ok {
		if iterations, err = strconv.Atoi(s); err != nil {
			return "", ScramCredential{}, fmt.Errorf("failed to parse iterations count %q: %w", s, err)
		}
	}
	password, hasPassword := take("password")
	salted, hasSalted := take("saltedpassword")
	if len(fields) > 0 {
		var unknown []string
		for k := range fields {
			unknown = append(unknown, k)
		}
		return "", ScramCredential{}, fmt.Errorf("unknown SCRAM configurations: %s", strings.Join(unknown, ", "))
	}
	switch {
	case hasPassword:
		cred, err = DeriveScramCredential(m, password, salt, iterations)
	case !hasSalted:
		return "", ScramCredential{}, fmt.Errorf("you must supply one of 'password' or 'saltedpassword' to add-scram")
	case salt == nil:
		return "", ScramCredential{}, fmt.Errorf("you must supply 'salt' with 'saltedpassword' to add-scram")
	default:
		sp, derr := base64.StdEncoding.DecodeString(salted)
		if derr != nil {
			return "", ScramCredential{}, fmt.Errorf("failed to decode given saltedpassword: %w", derr)
		}
		cred, err = m.CredentialFromSaltedPassword(sp, salt, iterations)
	}
	if err != nil {
		return "", ScramCredential{}, fmt.Errorf("add-scram for %s: %w", user, err)
	}
	return user, cred, nil
}
