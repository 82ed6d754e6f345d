// Package admincli is "kbroker admin", the operator's toolbox for users
// without a Java distribution: the everyday parts of kafka-topics.sh,
// kafka-configs.sh, kafka-consumer-groups.sh, kafka-leader-election.sh,
// kafka-log-dirs.sh, kafka-reassign-partitions.sh, kafka-cluster.sh's
// unregister, kafka-metadata-quorum.sh and kafka-acls.sh, and SCRAM users
// as kafka-configs.sh alters them. cmd/kbroker calls Run; each command is
// an adminCommand (admin_<area>.go) run with a connected client.
//
// It speaks only the Kafka protocol (franz-go's kgo, kadm and kmsg), so it
// works against any broker that serves the APIs, kbroker or Kafka. It
// reads --command-config with config's Java properties parser and builds
// its TLS and SASL client options itself (admin_security.go). It must
// never import the broker's packages (cluster, replication, metadata,
// storage, wire, security): a command that needs what the protocol does
// not carry is a missing API, not a shortcut. Nor does it import
// cmd/kbroker or internal/bench; its flag helpers shared with them are in
// internal/cliflag. Its tests start a broker in process (cluster) and
// write certificates with security, as a deployment would.
package admincli
