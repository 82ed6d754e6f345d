package config

// Delegation token keys (KIP-48), with Kafka's names and defaults.
var delegationTokenKeys = func() []brokerKey {
	secret := stringKey("delegation.token.secret.key", "",
		"Secret of delegation tokens: a token's password is the HMAC-SHA512 of its id under this key, so every node must have the same one. Unset disables delegation tokens (DELEGATION_TOKEN_AUTH_DISABLED).",
		func(c *Config) *string { return &c.DelegationTokenSecretKey })
	secret.typ, secret.sensitive = TypePassword, true
	return []brokerKey{
		secret,
		intKey("delegation.token.max.lifetime.ms", "604800000", "Longest a delegation token lives, renewed or not.", 1,
			func(c *Config) *int64 { return &c.DelegationTokenMaxLifetimeMs }),
		intKey("delegation.token.expiry.time.ms", "86400000", "How long a delegation token lives from its creation or last renewal.", 1,
			func(c *Config) *int64 { return &c.DelegationTokenExpiryTimeMs }),
		intKey("delegation.token.expiry.check.interval.ms", "3600000", "How often the active controller removes expired delegation tokens.", 1,
			func(c *Config) *int64 { return &c.DelegationTokenExpiryCheckIntervalMs }),
	}
}()
