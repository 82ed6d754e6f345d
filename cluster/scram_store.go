package cluster

import "github.com/kbroker/kbroker/security/sasl"

// scramStore is where SCRAM-SHA-256/512 credentials are looked up by the
// SASL listeners. It holds no users yet: the metadata-backed store (the
// credentials of AlterUserScramCredentials and --add-scram, kept in the
// metadata log as Kafka does) replaces this body.
func (n *Node) scramStore() sasl.CredentialStore {
	return sasl.ScramCredentials{}
}
