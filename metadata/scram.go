package metadata

import (
	"cmp"
	"maps"
	"slices"
)

// ScramCredential returns user's credential for mechanism.
func (i *Image) ScramCredential(user string, mechanism int8) (*ScramCredential, bool) {
	c, ok := i.Scram[ScramKey{User: user, Mechanism: mechanism}]
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
	i.Scram[c.Key()] = c
}
