// Package quotas is the broker's client quota engine, Kafka's
// ClientQuotaManager, ClientRequestQuotaManager and
// ControllerMutationQuotaManager in one: the sensors of
// producer_byte_rate, consumer_byte_rate, request_percentage,
// controller_mutation_rate and connection_creation_rate, the lookup of
// the quota that applies to a user and client id in Kafka's order of
// precedence, the throttle time of a sensor over its bound, and the
// metrics of the busiest sensors.
//
// It owns when a client is over its quota and for how long; the
// connection layer (cluster/server) decides what a throttle does to a
// response and a connection, and the handlers of CreateTopics,
// CreatePartitions and DeleteTopics spend the mutation quota. Manager's
// methods take its one mutex for a map update and never block, so they
// may be called on any request path. The quotas themselves come from the
// metadata image (a function the node passes in), read on every call.
//
// It imports metadata (quota entities and keys), internal/quota (the
// sampled rate and the token bucket) and prometheus, and must never
// import any other kbroker package: it knows nothing of requests or
// connections.
package quotas
