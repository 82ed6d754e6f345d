// Command kbroker runs a Kafka-protocol broker.
//
//	kbroker [serve] [--config server.properties] [--set key=value]...
//
// With no arguments it starts a single-node broker and controller that
// listens on localhost:9092 and keeps its data under ./data.
//
// It imports cluster (serve), config, security and security/sasl (tls
// init, --add-scram), wire/record (dump-log), internal/bench,
// internal/admincli and internal/cliflag. Nothing imports it.
package main
