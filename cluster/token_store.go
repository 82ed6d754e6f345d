package cluster

import (
	"context"
	"sync"
	"time"

	"github.com/kbroker/kbroker/security/sasl"
)

// Delegation token authentication: SCRAM with tokenauth=true looks the
// token id up in this node's metadata image and checks the client's
// proof against a credential derived from the token's HMAC (computed
// with this node's delegation.token.secret.key), as Kafka's
// DelegationTokenCache does.

// tokenCredentials caches the derived credentials, by token id and
// mechanism: deriving one is a PBKDF2 of 4096 rounds, and its salt must
// stay the same between attempts, as a stored credential's does. Only
// tokens of the image are cached, and entries of removed tokens are
// dropped, so it never holds more than two entries per token.
type tokenCredentials struct {
	mu    sync.Mutex
	creds map[tokenCredKey]sasl.ScramCredential
}

type tokenCredKey struct {
	tokenID   string
	mechanism int8
}

// DelegationTokenCredential implements sasl.TokenStore. An unknown token,
// an expired one, or tokens disabled (no secret) is not found.
func (s *imageScramStore) DelegationTokenCredential(_ context.Context, m sasl.ScramMechanism, tokenID string) (sasl.TokenCredential, bool, error) {
	secret := s.n.cfg.DelegationTokenSecretKey
	if secret == "" {
		return sasl.TokenCredential{}, false, nil
	}
	img := s.n.image()
	t, ok := img.DelegationToken(tokenID)
	if !ok {
		return sasl.TokenCredential{}, false, nil
	}
	expiry := time.UnixMilli(min(t.ExpiryMs, t.MaxMs))
	if !time.Now().Before(expiry) {
		return sasl.TokenCredential{}, false, nil
	}
	k := tokenCredKey{tokenID, m.Type}
	c := &s.tokens
	c.mu.Lock()
	defer c.mu.Unlock()
	cred, ok := c.creds[k]
	if !ok {
		var err error
		cred, err = sasl.DeriveTokenCredential(m, sasl.TokenHMAC([]byte(secret), tokenID), nil)
		if err != nil {
			return sasl.TokenCredential{}, false, err
		}
		if c.creds == nil {
			c.creds = map[tokenCredKey]sasl.ScramCredential{}
		}
		for old := range c.creds {
			if _, live := img.Tokens[old.tokenID]; !live {
				delete(c.creds, old)
			}
		}
		c.creds[k] = cred
	}
	return sasl.TokenCredential{Owner: t.Owner.Name, Credential: cred, Expiry: expiry}, true, nil
}
