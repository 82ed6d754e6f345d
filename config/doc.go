// Package config holds a node's configuration under Apache Kafka's property
// names, and the per-topic configuration derived from it.
//
// # Sources
//
// Load merges three sources; a later source wins over an earlier one:
//
//  1. a Java .properties file (server.properties syntax),
//  2. environment variables KBROKER_<KEY>: the key upper-cased with dots
//     turned into underscores (KBROKER_NODE_ID, KBROKER_LOG_DIRS),
//  3. "key=value" strings, one per --set flag.
//
// Every KBROKER_ variable must name a key: a typo is an error, as are unknown
// keys in the file and in --set. Values are parsed and checked once all
// sources are merged; errors name the key and where the value came from.
//
// A server.properties written for Kafka 4.x loads as it is: the Kafka
// broker keys with no meaning here (thread pools, socket buffers, metrics
// reporters, Kafka's Raft timeouts, share groups, tiered storage plumbing;
// ignored_keys.go) are accepted, kept in Config.Ignored for one startup
// warning (IgnoredWarning) and DescribeConfigs, and change nothing. A key
// neither kbroker's nor Kafka's is still an error. Keys owned by other
// packages (security, transactions, connections) are defined there, never
// in the ignored list.
//
// Where Kafka has several keys for one setting, Kafka's precedence applies
// whatever source each came from: log.retention.ms over
// log.retention.minutes over log.retention.hours, log.roll.ms over
// log.roll.hours, log.dirs over log.dir.
//
// # One table
//
// Each broker key is defined once, in keys.go (and log_keys.go for the
// log and cleaner keys): its name, default, Kafka config type, one-line
// description, parser, printer and range check. Default, Load, Validate,
// Keys and BrokerConfigEntries all read that table. Topic keys have their
// own table in topic_keys.go: every topic-level key of Kafka 4.x, each
// naming the broker key (Kafka's synonym) that supplies its default, or
// none where Kafka has none. describe.go builds DescribeConfigs rows with
// Kafka's sources and synonyms: topic override, cluster-wide dynamic
// default, static broker key, built-in default.
//
// The package is pure: it reads no environment variable and no file except
// the ones Load is handed, and starts no goroutines.
//
// It imports the standard library only, and must never import a kbroker
// package: the layers below it take their own config types, which
// package cluster fills in from it.
package config
