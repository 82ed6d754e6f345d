// Package errcode is the one place where an error from the layers below
// the Kafka API becomes the error code and message a client sees: errors
// that already are a kerr.Error keep their code, the partition layer's
// errors go through replication.KafkaError, and the sentinel errors of
// metadata, features and the record format have a table here. Messages
// sent to clients have filesystem paths removed.
//
// It imports metadata, metadata/features, replication, wire/record and
// kerr for their error values only, and must never import any package of
// cluster: the handlers (cluster/kafkaapi) depend on it, not the reverse.
package errcode
