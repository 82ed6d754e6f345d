// Package sasl implements the SASL mechanisms a Kafka broker offers, without
// sockets: each side is a state machine fed the bytes the peer sent.
//
// Server side (one ServerSession per connection attempt, built by
// Server.Start):
//   - PLAIN (RFC 4616), checked against a PlainVerifier such as the user_<name>
//     options of a PlainLoginModule JAAS entry (ParsePlainJAAS).
//   - SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), checked against
//     ScramCredentials looked up through a CredentialStore, so the broker can
//     keep them in its metadata log as Kafka does (KIP-554). With the
//     tokenauth=true extension the user name is a delegation token id
//     (KIP-48), looked up through the store's optional TokenStore; the
//     session then reports the token (TokenSession).
//
// Client side (for inter-broker connections): PlainClient and ScramClient
// (Token sends tokenauth=true).
//
// Credentials are derived exactly as Kafka stores them (DeriveScramCredential)
// and the kafka-storage "--add-scram" argument form is parsed by ParseAddScram.
//
// It imports the standard library only, and must never import a kbroker
// package: where credentials are stored is the caller's
// (CredentialStore).
package sasl
