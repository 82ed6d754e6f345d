package access

// ScramCredential is one user's SCRAM credential for one mechanism
// (Kafka's UserScramCredentialRecord): never the password, only what the
// server needs to verify a SCRAM exchange. Mechanism is Kafka's code (1
// SCRAM-SHA-256, 2 SCRAM-SHA-512).
type ScramCredential struct {
	User       string `json:"name"`
	Mechanism  int8   `json:"mechanism"`
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"storedKey"`
	ServerKey  []byte `json:"serverKey"`
	Iterations int32  `json:"iterations"`
}

// ScramKey names one credential: a user and a mechanism.
type ScramKey struct {
	User      string `json:"name"`
	Mechanism int8   `json:"mechanism"`
}

// Key is the credential's user and mechanism.
func (c *ScramCredential) Key() ScramKey { return ScramKey{c.User, c.Mechanism} }
