package metadata

import (
	"cmp"
	"maps"
	"slices"
)

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

func (c *ScramCredential) key() ScramKey { return ScramKey{c.User, c.Mechanism} }

// ScramCredential returns user's credential for mechanism.
func (i *Image) ScramCredential(user string, mechanism int8) (*ScramCredential, bool) {
	c, ok := i.Scram[ScramKey{user, mechanism}]
	return c, ok
}

// ScramCredentials returns every credential sorted by user and mechanism.
func (i *Image) ScramCredentials() []*ScramCredential {
	out := slices.Collect(maps.Values(i.Scram))
	slices.SortFunc(out, func(a, b *ScramCredential) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Mechanism, b.Mechanism))
	})
	return out
}

// withScram replaces (or adds) c in a copy of the credential map.
func (i *Image) withScram(c *ScramCredential) {
	i.Scram = maps.Clone(i.Scram)
	if i.Scram == nil {
		i.Scram = map[ScramKey]*ScramCredential{}
	}
	i.Scram[c.key()] = c
}
