// Package kafkatest holds test helpers that speak the Kafka protocol by
// hand (Conn), so tests of the broker can send requests no well-behaved
// client would. It is imported by tests only, and imports nothing of
// kbroker's: it sees a broker as a client does.
package kafkatest
