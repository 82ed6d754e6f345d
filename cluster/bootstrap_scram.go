package cluster

import (
	"github.com/kbroker/kbroker/cluster/kafkaapi"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/security/sasl"
)

// BootstrapScram is one SCRAM credential given to kbroker serve with
// --add-scram (sasl.ParseAddScram): the user and the derived credential,
// never the password.
type BootstrapScram struct {
	User       string
	Credential sasl.ScramCredential
}

// SetBootstrapScram gives the node SCRAM credentials to write into the
// metadata log with the cluster id, when this node creates the cluster
// (the quorum's first start). Once the cluster exists they are ignored,
// with a log line. Call it before Run.
func (n *Node) SetBootstrapScram(creds []BootstrapScram) {
	n.bootstrapScramInput = creds
	n.bootstrapScram = make([]metadata.ScramCredential, 0, len(creds))
	for _, c := range creds {
		n.bootstrapScram = append(n.bootstrapScram, kafkaapi.MetadataScram(c.User, c.Credential))
	}
}
