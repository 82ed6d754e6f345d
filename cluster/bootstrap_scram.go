package cluster

import (
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/security/sasl"
)

// BootstrapScram is one SCRAM credential of the --add-scram option
// (kafka-storage format's), as sasl.ParseAddScram returns it.
type BootstrapScram struct {
	User       string
	Credential sasl.ScramCredential
}

// SetBootstrapScram gives the node SCRAM credentials to write into the
// metadata log with the cluster id, when this node creates the cluster
// (the quorum's first start). Once the cluster exists they are ignored,
// with a log line. Call it before Run.
func (n *Node) SetBootstrapScram(creds []BootstrapScram) {
	n.bootstrapScram = make([]metadata.ScramCredential, 0, len(creds))
	for _, c := range creds {
		n.bootstrapScram = append(n.bootstrapScram, metadataScram(c.User, c.Credential))
	}
}

// metadataScram is the record form of a SCRAM credential.
func metadataScram(user string, c sasl.ScramCredential) metadata.ScramCredential {
	return metadata.ScramCredential{
		User:       user,
		Mechanism:  c.Mechanism.Type,
		Salt:       c.Salt,
		StoredKey:  c.StoredKey,
		ServerKey:  c.ServerKey,
		Iterations: int32(c.Iterations),
	}
}
