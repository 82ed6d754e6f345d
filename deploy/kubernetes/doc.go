// Package kubernetes holds the Kubernetes manifests of deploy/kubernetes
// and, in its test, the checks they must pass: every document decodes
// strictly into the Kubernetes API types, and the StatefulSet honours
// what running kbroker needs (probes on the admin listener's endpoints,
// one broker down at a time, time for the controlled shutdown, brokers on
// different nodes, the rack from the zone, no secret in an env value,
// resource requests and limits, and a configuration kbroker loads).
//
// It has no code of its own. Its tests import config (to load the
// manifests' KBROKER_ variables) and the Kubernetes modules, which
// nothing else may import; they must never import the broker's other
// packages.
package kubernetes
