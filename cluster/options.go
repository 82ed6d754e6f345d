package cluster

import "github.com/kbroker/kbroker/security/sasl"

// NodeOption adjusts a Node at NewNode.
type NodeOption func(*Node)

// WithBootstrapScram hands the node the --add-scram credentials. They are
// written to the metadata log when the quorum first starts, as
// kafka-storage format --add-scram does; on later starts they are
// ignored (the log already has its credentials).
func WithBootstrapScram(creds ...BootstrapScram) NodeOption {
	return func(n *Node) { n.SetBootstrapScram(append(n.bootstrapScramInput, creds...)) }
}

// withScramStore replaces the SCRAM credential store, for tests.
func withScramStore(s sasl.CredentialStore) NodeOption {
	return func(n *Node) { n.scram = s }
}
