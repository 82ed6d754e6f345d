package kafkaapi

import (
	"crypto/hmac"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/metadata/features"
	"github.com/kbroker/kbroker/security/sasl"
)

// What the delegation token APIs (38–41) share: the checks Kafka's
// KafkaApis and DelegationTokenControlManager make before touching a
// token, the token's HMAC and the errors' codes.
//
// The HMAC (a token's password) is computed here, from the token id and
// this broker's delegation.token.secret.key, never stored in the metadata
// log, and never logged.

// tokenErrorTimestamp is Kafka's DelegationTokenManager.ErrorTimestamp,
// the expiry timestamp of a failed renewal or expiry.
const tokenErrorTimestamp = -1

// tokenPrincipal is rc's principal as a token names it.
func tokenPrincipal(rc *server.RequestContext) metadata.TokenPrincipal {
	return metadata.TokenPrincipal{Type: rc.Principal.Type, Name: rc.Principal.Name}
}

// tokensEnabled: delegation.token.secret.key is set.
func (h *Handlers) tokensEnabled() bool { return h.cfg.DelegationTokenSecretKey != "" }

// tokenHMAC is the token's password.
func (h *Handlers) tokenHMAC(tokenID string) []byte {
	return sasl.TokenHMAC([]byte(h.cfg.DelegationTokenSecretKey), tokenID)
}

// tokenPrecheck is what every token request is refused for before the
// token is looked at, in Kafka's order: a connection that may not ask
// (PLAINTEXT, SSL without a client certificate, or itself token
// authenticated), tokens disabled, a metadata.version without tokens.
func (h *Handlers) tokenPrecheck(rc *server.RequestContext, img *metadata.Image) error {
	switch {
	case !rc.TokenRequestsAllowed:
		return kerr.DelegationTokenRequestNotAllowed
	case !h.tokensEnabled():
		return kerr.DelegationTokenAuthDisabled
	case img.FeatureLevel(features.MetadataVersion) < features.MetadataVersionDelegationTokens:
		return kerr.UnsupportedVersion
	}
	return nil
}

// tokenByHMAC finds the token whose HMAC is mac (Kafka's tokenForHmac),
// comparing in constant time.
func (h *Handlers) tokenByHMAC(img *metadata.Image, mac []byte) (*metadata.DelegationToken, bool) {
	for _, t := range img.DelegationTokens() {
		if hmac.Equal(h.tokenHMAC(t.TokenID), mac) {
			return t, true
		}
	}
	return nil, false
}

// tokenErrorCode is the Kafka code of a token operation's error.
func tokenErrorCode(err error) int16 {
	for _, m := range []struct {
		err  error
		code *kerr.Error
	}{
		{metadata.ErrDelegationTokenNotFound, kerr.DelegationTokenNotFound},
		{metadata.ErrDelegationTokenExpired, kerr.DelegationTokenExpired},
		{metadata.ErrDelegationTokenOwnerMismatch, kerr.DelegationTokenOwnerMismatch},
		{metadata.ErrDelegationTokensDisabled, kerr.DelegationTokenAuthDisabled},
		{metadata.ErrInvalidPrincipalType, kerr.InvalidPrincipalType},
		{metadata.ErrUnsupportedFeature, kerr.UnsupportedVersion},
	} {
		if errors.Is(err, m.err) {
			return m.code.Code
		}
	}
	return errcode.Of(err)
}
