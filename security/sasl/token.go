package sasl

import (
	"context"
	"crypto/hmac"
	"crypto/sha512"
	"encoding/base64"
	"time"
)

// Delegation token authentication (KIP-48) over SCRAM: the client sends
// the token id as the user name, the tokenauth=true extension in its
// client-first-message, and proves knowledge of the token's HMAC
// (base64) as the password. The session authenticates as the token's
// owner.

// TokenAuthExtension is the SCRAM extension a client asks for token
// authentication with (Kafka's ScramLoginModule.TOKEN_AUTH_CONFIG).
const TokenAuthExtension = "tokenauth"

// TokenCredential is a delegation token as SCRAM checks it: the owner's
// principal name, the SCRAM credential derived from its HMAC
// (DeriveTokenCredential) and when it expires.
type TokenCredential struct {
	Owner      string
	Credential ScramCredential
	// Expiry is the token's expiry timestamp (the earlier of its
	// expiry and maximum timestamps); at and after it authentication
	// fails.
	Expiry time.Time
}

// TokenStore is the optional ability of a CredentialStore to look up
// delegation tokens by id. Without it, tokenauth fails as an unknown
// user does. ok is false for an unknown token.
type TokenStore interface {
	DelegationTokenCredential(ctx context.Context, mechanism ScramMechanism, tokenID string) (cred TokenCredential, ok bool, err error)
}

// TokenSession is the optional ability of a ServerSession to tell that it
// authenticated with a delegation token: Kafka refuses delegation token
// requests on such connections, and a re-authenticating session must end
// when its token does.
type TokenSession interface {
	// TokenAuthenticated reports whether the finished exchange used a
	// delegation token.
	TokenAuthenticated() bool
	// CredentialExpiry is the token's expiry, zero without a token.
	CredentialExpiry() time.Time
}

// TokenHMAC is a token's password as Kafka computes it: HMAC-SHA512 of
// the token id under delegation.token.secret.key.
func TokenHMAC(secret []byte, tokenID string) []byte {
	mac := hmac.New(sha512.New, secret)
	mac.Write([]byte(tokenID))
	return mac.Sum(nil)
}

// TokenPassword is the text form of a token's HMAC that clients use as
// the SCRAM password (standard base64, as Kafka's tokenInfo.hmacAsBase64String).
func TokenPassword(hmac []byte) string { return base64.StdEncoding.EncodeToString(hmac) }

// DeriveTokenCredential derives the SCRAM credential of a token from its
// HMAC, with Kafka's minimum iteration count, as Kafka's
// DelegationTokenCache does. salt nil is a fresh random one.
func DeriveTokenCredential(m ScramMechanism, hmac, salt []byte) (ScramCredential, error) {
	return DeriveScramCredential(m, TokenPassword(hmac), salt, MinScramIterations)
}
