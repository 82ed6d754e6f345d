// Package quota measures rates the way Kafka's quota managers do (a
// SampledStat Rate, and the TokenBucket of the controller mutation
// quota) and turns a rate over its bound into a throttle time. It is
// shared by the client quotas and the replication throttles.
//
// It imports the standard library only, and must never import a kbroker
// package: where rates are recorded is its callers'.
package quota
