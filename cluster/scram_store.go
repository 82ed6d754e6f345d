package cluster

import (
	"context"
	"slices"

	"github.com/kbroker/kbroker/security/sasl"
)

// imageScramStore is the SCRAM credential store of SASL/SCRAM
// authentication: the UserScramCredential records of this node's metadata
// image, so a credential altered on any node is used by every node as
// soon as its image has it.
//
// It also authenticates delegation tokens (token_store.go).
type imageScramStore struct {
	n      *Node
	tokens tokenCredentials
}

func (n *Node) scramStore() sasl.CredentialStore { return &imageScramStore{n: n} }

// ScramCredential implements sasl.CredentialStore.
func (s *imageScramStore) ScramCredential(_ context.Context, m sasl.ScramMechanism, user string) (sasl.ScramCredential, bool, error) {
	c, ok := s.n.image().ScramCredential(user, m.Type)
	if !ok {
		return sasl.ScramCredential{}, false, nil
	}
	return sasl.ScramCredential{
		Mechanism:  m,
		Salt:       slices.Clone(c.Salt),
		Iterations: int(c.Iterations),
		StoredKey:  slices.Clone(c.StoredKey),
		ServerKey:  slices.Clone(c.ServerKey),
	}, true, nil
}
