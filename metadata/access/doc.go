// Package access holds what the cluster metadata says about clients'
// access, as values: the ACLs (Kafka's AccessControlEntryRecord) with
// their index by resource pattern (ACLs.Matching) and Kafka's ACL
// filters, the SCRAM credentials by user and mechanism, and the client
// quota entities, alterations, checks and filters (Kafka's
// ClientQuotaRecord). The JSON of these values is the payload of their
// records and of snapshots, so a change to a field's name or meaning is
// a change to the raft log.
//
// It does not apply records, keep images or propose anything: package
// metadata does, and keeps every name here as an alias for its callers.
// Deciding what an ACL allows is cluster/acl's. This package must never
// import metadata (metadata imports it), raft, or anything of kbroker:
// standard library only.
package access
