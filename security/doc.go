// Package security holds what a Kafka listener needs to authenticate
// clients, configured with Kafka's property names:
//
//   - TLS from PEM keystores and truststores (ssl.keystore.*, ssl.truststore.*,
//     ssl.key.password, ssl.client.auth, ssl.enabled.protocols,
//     ssl.cipher.suites, ssl.endpoint.identification.algorithm), for the
//     server side of a listener and the client side of inter-broker
//     connections, with certificates reloaded when their files change
//     (TLSStore).
//   - Principals: "User:<DN>" from a client certificate, rewritten by
//     ssl.principal.mapping.rules (PrincipalMapper), or the SASL user.
//   - SASL on a connection: the SaslHandshake / SaslAuthenticate exchange
//     (SASLAuthenticator) over the mechanisms of package security/sasl.
//
// Properties arrive as a flat map; ListenerProps gives the view of one
// listener, where listener.name.<name>.<key> overrides <key> as in Kafka.
//
// The package knows nothing of the broker: no cluster, storage or metadata
// imports. SCRAM credentials come through sasl.CredentialStore.
package security
