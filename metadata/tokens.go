package metadata

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/kbroker/kbroker/metadata/features"
)

// Delegation tokens (KIP-48): the DelegationToken and
// RemoveDelegationToken records, the image's tokens and the controller
// operations that create, renew and expire them (Kafka's
// DelegationTokenControlManager).
//
// A record holds what Kafka's DelegationTokenRecord holds: the token id,
// owner, requester, renewers and the three timestamps. Never the HMAC:
// the HMAC is the token's password, and each node computes it from the
// token id with its own delegation.token.secret.key (which every node
// must share), as Kafka's brokers do. The log thus holds no secret.
//
// The timestamps come from the active controller's clock, chosen when it
// proposes the record, so applying stays deterministic.

// The record types are numbered as the API keys: CreateDelegationToken
// (38) for a token and RenewDelegationToken's 39 for a removal, because
// ExpireDelegationToken's 40 is taken by AlterReassignment.
const (
	recDelegationToken       recordType = 38
	recRemoveDelegationToken recordType = 39
)

var (
	// ErrDelegationTokenNotFound: no token has the HMAC or id. Kafka:
	// DELEGATION_TOKEN_NOT_FOUND.
	ErrDelegationTokenNotFound = errors.New("metadata: delegation token not found")
	// ErrDelegationTokenExpired: the token is past its expiry or maximum
	// timestamp. Kafka: DELEGATION_TOKEN_EXPIRED.
	ErrDelegationTokenExpired = errors.New("metadata: delegation token expired")
	// ErrDelegationTokenOwnerMismatch: the principal is neither the
	// token's owner nor one of its renewers. Kafka:
	// DELEGATION_TOKEN_OWNER_MISMATCH.
	ErrDelegationTokenOwnerMismatch = errors.New("metadata: principal is not the token's owner or a renewer")
	// ErrDelegationTokensDisabled: the controller has no
	// delegation.token.secret.key. Kafka: DELEGATION_TOKEN_AUTH_DISABLED.
	ErrDelegationTokensDisabled = errors.New("metadata: delegation tokens are disabled (no delegation.token.secret.key)")
	// ErrInvalidPrincipalType: a renewer that is not a User. Kafka:
	// INVALID_PRINCIPAL_TYPE.
	ErrInvalidPrincipalType = errors.New("metadata: invalid principal type")
)

func init() {
	errorCodes = append(errorCodes, []struct {
		code string
		err  error
	}{
		{"DELEGATION_TOKEN_NOT_FOUND", ErrDelegationTokenNotFound},
		{"DELEGATION_TOKEN_EXPIRED", ErrDelegationTokenExpired},
		{"DELEGATION_TOKEN_OWNER_MISMATCH", ErrDelegationTokenOwnerMismatch},
		{"DELEGATION_TOKEN_AUTH_DISABLED", ErrDelegationTokensDisabled},
		{"INVALID_PRINCIPAL_TYPE", ErrInvalidPrincipalType},
	}...)
	recordNames[recDelegationToken] = "DelegationToken"
	recordNames[recRemoveDelegationToken] = "RemoveDelegationToken"
}

// DelegationTokenConfig is the controller's share of Kafka's
// delegation.token.* configs; the secret key stays with the brokers.
type DelegationTokenConfig struct {
	// Enabled: delegation.token.secret.key is set. Without it the
	// operations fail with ErrDelegationTokensDisabled, as Kafka's
	// controller refuses them.
	Enabled bool
	// MaxLifetime (delegation.token.max.lifetime.ms): no token lives
	// longer, renewed or not. Default 7 days.
	MaxLifetime time.Duration
	// ExpiryTime (delegation.token.expiry.time.ms): how long a token
	// lives from its creation or last renewal. Default 1 day.
	ExpiryTime time.Duration
	// ExpiryCheckInterval (delegation.token.expiry.check.interval.ms):
	// how often the active controller removes expired tokens. Default 1
	// hour.
	ExpiryCheckInterval time.Duration
}

// Kafka's defaults of the delegation.token.* configs.
const (
	DefaultDelegationTokenMaxLifetime         = 7 * 24 * time.Hour
	DefaultDelegationTokenExpiryTime          = 24 * time.Hour
	DefaultDelegationTokenExpiryCheckInterval = time.Hour
)

func (c DelegationTokenConfig) withDefaults() DelegationTokenConfig {
	if c.MaxLifetime <= 0 {
		c.MaxLifetime = DefaultDelegationTokenMaxLifetime
	}
	if c.ExpiryTime <= 0 {
		c.ExpiryTime = DefaultDelegationTokenExpiryTime
	}
	if c.ExpiryCheckInterval <= 0 {
		c.ExpiryCheckInterval = DefaultDelegationTokenExpiryCheckInterval
	}
	return c
}

// TokenPrincipal is a principal as a token names it: Kafka's
// KafkaPrincipal, "User:alice".
type TokenPrincipal struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

func (p TokenPrincipal) String() string { return p.Type + ":" + p.Name }

// DelegationToken is one token's information (Kafka's TokenInformation
// and DelegationTokenRecord). Timestamps are Unix milliseconds.
type DelegationToken struct {
	TokenID   string           `json:"tokenId"`
	Owner     TokenPrincipal   `json:"owner"`
	Requester TokenPrincipal   `json:"requester"`
	Renewers  []TokenPrincipal `json:"renewers,omitempty"`
	IssueMs   int64            `json:"issueTimestampMs"`
	MaxMs     int64            `json:"maxTimestampMs"`
	ExpiryMs  int64            `json:"expiryTimestampMs"`
}

// OwnerOrRenewer reports whether p is the token's owner or one of its
// renewers: who may renew, expire and describe it.
func (t *DelegationToken) OwnerOrRenewer(p TokenPrincipal) bool {
	return t.Owner == p || slices.Contains(t.Renewers, p)
}

// Expired reports whether the token is past its expiry or maximum
// timestamp at nowMs, as Kafka checks both.
func (t *DelegationToken) Expired(nowMs int64) bool {
	return t.MaxMs < nowMs || t.ExpiryMs < nowMs
}

// removeDelegationTokenRecord removes one token (Kafka's
// RemoveDelegationTokenRecord).
type removeDelegationTokenRecord struct {
	TokenID string `json:"tokenId"`
}

// DelegationToken returns the token of id.
func (i *Image) DelegationToken(id string) (*DelegationToken, bool) {
	t, ok := i.Tokens[id]
	return t, ok
}

// DelegationTokens returns every token, sorted by id.
func (i *Image) DelegationTokens() []*DelegationToken {
	out := slices.Collect(maps.Values(i.Tokens))
	slices.SortFunc(out, func(a, b *DelegationToken) int { return cmp.Compare(a.TokenID, b.TokenID) })
	return out
}

func checkTokenRecords(img *Image, t recordType) error {
	if mv := img.Features()[features.MetadataVersion]; mv < features.MetadataVersionDelegationTokens {
		return fmt.Errorf("%w: %v at metadata.version %d", ErrUnsupportedRecord, t, mv)
	}
	return nil
}

// applyDelegationToken adds a token or replaces it (a renewal or a
// timed expiry changes its expiry timestamp).
func applyDelegationToken(img *Image, r *DelegationToken) error {
	if err := checkTokenRecords(img, recDelegationToken); err != nil {
		return err
	}
	if r.TokenID == "" || r.Owner.Name == "" {
		return fmt.Errorf("%w: delegation token without id or owner", ErrInvalidConfig)
	}
	t := *r
	t.Renewers = slices.Clone(r.Renewers)
	img.Tokens = maps.Clone(img.Tokens)
	if img.Tokens == nil {
		img.Tokens = map[string]*DelegationToken{}
	}
	img.Tokens[t.TokenID] = &t
	return nil
}

func applyRemoveDelegationToken(img *Image, r *removeDelegationTokenRecord) error {
	if err := checkTokenRecords(img, recRemoveDelegationToken); err != nil {
		return err
	}
	if _, ok := img.Tokens[r.TokenID]; !ok {
		return fmt.Errorf("%w: %s", ErrDelegationTokenNotFound, r.TokenID)
	}
	img.Tokens = maps.Clone(img.Tokens)
	delete(img.Tokens, r.TokenID)
	if len(img.Tokens) == 0 {
		img.Tokens = nil // as a snapshot without tokens restores it
	}
	return nil
}

// CreateTokenRequest is a CreateDelegationToken request as the broker
// checked it: the owner (the requester unless another was named and the
// requester may create tokens for it), the renewers and the requested
// maximum lifetime (<= 0: the configured one).
type CreateTokenRequest struct {
	Owner         TokenPrincipal   `json:"owner"`
	Requester     TokenPrincipal   `json:"requester"`
	Renewers      []TokenPrincipal `json:"renewers,omitempty"`
	MaxLifetimeMs int64            `json:"maxLifetimeMs"`
}

// CreateDelegationToken creates a token on the active controller and
// returns it (its id is a random UUID).
func (s *Store) CreateDelegationToken(ctx context.Context, r CreateTokenRequest) (*DelegationToken, error) {
	return call(ctx, s, opCreateDelegationToken, r)
}

// RenewTokenRequest renews (ExpiryPeriodMs: the renew period, <= 0 the
// configured expiry time) or expires (ExpiryPeriodMs: the time left, < 0
// at once) the token TokenID for Principal.
type RenewTokenRequest struct {
	TokenID        string         `json:"tokenId"`
	Principal      TokenPrincipal `json:"principal"`
	ExpiryPeriodMs int64          `json:"expiryPeriodMs"`
}

// RenewDelegationToken moves a token's expiry to now plus the renew period
// (capped by the configured expiry time and the token's maximum) and
// returns the new expiry timestamp.
func (s *Store) RenewDelegationToken(ctx context.Context, r RenewTokenRequest) (int64, error) {
	return call(ctx, s, opRenewDelegationToken, r)
}

// ExpireDelegationToken moves a token's expiry to now plus the period
// (capped by its maximum), or removes it when the period is negative, and
// returns the new expiry timestamp.
func (s *Store) ExpireDelegationToken(ctx context.Context, r RenewTokenRequest) (int64, error) {
	return call(ctx, s, opExpireDelegationToken, r)
}

// tokenPreconditions are the checks every token operation starts with,
// in Kafka's order: enabled, then the metadata.version.
func (s *Store) tokenPreconditions(img *Image) error {
	if !s.cfg.DelegationTokens.Enabled {
		return ErrDelegationTokensDisabled
	}
	if mv := img.Features()[features.MetadataVersion]; mv < features.MetadataVersionDelegationTokens {
		return fmt.Errorf("%w: delegation tokens need metadata.version %d, the cluster is at %d",
			ErrUnsupportedFeature, features.MetadataVersionDelegationTokens, mv)
	}
	return nil
}

// addMs is now+d without overflow (Kafka's sum).
func addMs(now, d int64) int64 {
	if d > 0 && now > math.MaxInt64-d {
		return math.MaxInt64
	}
	return now + d
}

var opCreateDelegationToken = defineOp("CreateDelegationToken", nil,
	func(s *Store, ctx context.Context, r CreateTokenRequest) (*DelegationToken, error) {
		img := s.Image()
		if err := s.tokenPreconditions(img); err != nil {
			return nil, err
		}
		for _, p := range r.Renewers {
			if p.Type != "User" {
				return nil, fmt.Errorf("%w: renewer %s", ErrInvalidPrincipalType, p)
			}
		}
		cfg := s.cfg.DelegationTokens.withDefaults()
		now := time.Now().UnixMilli()
		maxLife := cfg.MaxLifetime.Milliseconds()
		if r.MaxLifetimeMs > 0 {
			maxLife = min(maxLife, r.MaxLifetimeMs)
		}
		t := &DelegationToken{
			TokenID:   newTokenID(),
			Owner:     r.Owner,
			Requester: r.Requester,
			Renewers:  r.Renewers,
			IssueMs:   now,
			MaxMs:     addMs(now, maxLife),
		}
		t.ExpiryMs = min(t.MaxMs, addMs(now, cfg.ExpiryTime.Milliseconds()))
		if _, err := s.propose(ctx, recDelegationToken, t); err != nil {
			return nil, fmt.Errorf("create delegation token: %w", err)
		}
		return t, nil
	})

// newTokenID is a random UUID in Kafka's base64 form (Uuid.toString),
// which is what Kafka's token ids look like.
func newTokenID() string {
	var id [16]byte
	rand.Read(id[:])
	return base64.RawURLEncoding.EncodeToString(id[:])
}

var opRenewDelegationToken = defineOp("RenewDelegationToken", nil,
	func(s *Store, ctx context.Context, r RenewTokenRequest) (int64, error) {
		img := s.Image()
		if err := s.tokenPreconditions(img); err != nil {
			return 0, err
		}
		t, ok := img.Tokens[r.TokenID]
		if !ok {
			return 0, ErrDelegationTokenNotFound
		}
		now := time.Now().UnixMilli()
		if t.Expired(now) {
			return 0, ErrDelegationTokenExpired
		}
		if !t.OwnerOrRenewer(r.Principal) {
			return 0, ErrDelegationTokenOwnerMismatch
		}
		life := s.cfg.DelegationTokens.withDefaults().ExpiryTime.Milliseconds()
		if r.ExpiryPeriodMs > 0 {
			life = min(life, r.ExpiryPeriodMs)
		}
		next := *t
		next.ExpiryMs = min(t.MaxMs, addMs(now, life))
		if _, err := s.propose(ctx, recDelegationToken, &next); err != nil {
			return 0, fmt.Errorf("renew delegation token: %w", err)
		}
		return next.ExpiryMs, nil
	})

var opExpireDelegationToken = defineOp("ExpireDelegationToken", nil,
	func(s *Store, ctx context.Context, r RenewTokenRequest) (int64, error) {
		img := s.Image()
		if err := s.tokenPreconditions(img); err != nil {
			return 0, err
		}
		t, ok := img.Tokens[r.TokenID]
		if !ok {
			return 0, ErrDelegationTokenNotFound
		}
		if !t.OwnerOrRenewer(r.Principal) {
			return 0, ErrDelegationTokenOwnerMismatch
		}
		now := time.Now().UnixMilli()
		switch {
		case r.ExpiryPeriodMs < 0:
			if _, err := s.propose(ctx, recRemoveDelegationToken, &removeDelegationTokenRecord{TokenID: t.TokenID}); err != nil {
				return 0, fmt.Errorf("expire delegation token: %w", err)
			}
			return now, nil
		case t.Expired(now):
			return 0, ErrDelegationTokenExpired
		}
		next := *t
		next.ExpiryMs = min(t.MaxMs, addMs(now, r.ExpiryPeriodMs))
		if _, err := s.propose(ctx, recDelegationToken, &next); err != nil {
			return 0, fmt.Errorf("expire delegation token: %w", err)
		}
		return next.ExpiryMs, nil
	})

// expiredTokens returns the ids of the tokens of img expired at nowMs.
func expiredTokens(img *Image, nowMs int64) []string {
	var out []string
	for _, t := range img.DelegationTokens() {
		if t.Expired(nowMs) {
			out = append(out, t.TokenID)
		}
	}
	return out
}

// sweepExpiredTokens removes the expired tokens (Kafka's
// sweepExpiredDelegationTokens), on the active controller every
// delegation.token.expiry.check.interval.ms. The token id is logged,
// never its HMAC.
func (s *Store) sweepExpiredTokens(now time.Time) {
	img := s.Image()
	if len(img.Tokens) == 0 || checkTokenRecords(img, recRemoveDelegationToken) != nil {
		return
	}
	for _, id := range expiredTokens(img, now.UnixMilli()) {
		ctx, cancel := context.WithTimeout(s.ctx, transportTimeout)
		_, err := s.propose(ctx, recRemoveDelegationToken, &removeDelegationTokenRecord{TokenID: id})
		cancel()
		if err != nil {
			s.log.Debug("remove expired delegation token", "tokenId", id, "err", err)
			continue
		}
		s.log.Info("removed expired delegation token", "tokenId", id)
	}
}
