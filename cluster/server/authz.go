package server

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Principal is who a connection acts as, Kafka's KafkaPrincipal: a type
// ("User") and a name. PLAINTEXT listeners authenticate nobody, so their
// connections are AnonymousPrincipal, as in Kafka.
type Principal struct {
	Type string
	Name string
}

// AnonymousPrincipal is the principal of an unauthenticated connection.
var AnonymousPrincipal = Principal{Type: "User", Name: "ANONYMOUS"}

// String returns the principal as Kafka's ACLs write it: "User:ANONYMOUS".
func (p Principal) String() string { return p.Type + ":" + p.Name }

// ClusterResourceName is the name of the one CLUSTER resource, as Kafka
// names it in ACLs.
const ClusterResourceName = "kafka-cluster"

// Action is one authorization question: may the request's principal do
// Operation on the resource of ResourceType named Name? The operation and
// resource types are Kafka's ACL codes (kmsg.ACLOperationWrite,
// kmsg.ACLResourceTypeTopic, ...); CLUSTER resources are named
// "kafka-cluster". An empty Name, which no resource has, asks whether the
// principal may do Operation on some resource of the type (Kafka's
// authorizeByResourceType, e.g. WRITE on any topic for an idempotent
// producer).
type Action struct {
	Operation    kmsg.ACLOperation
	ResourceType kmsg.ACLResourceType
	Name         string
}

// Authorizer decides what a request may do, like Kafka's Authorizer
// interface. An implementation (ACLs) answers from the request's
// Principal, Listener and ClientAddress. It is called on the request's
// connection goroutine, once per request with every action the API
// declares, and again only for actions a handler asks about that were not
// declared; it must be safe for concurrent use by many connections and
// must not call back into the RequestContext's Authorized.
type Authorizer interface {
	// Authorize reports, for each action in order, whether it is allowed.
	Authorize(rc *RequestContext, actions []Action) []bool
}

// AllowAll is the default Authorizer: every principal may do everything,
// which is what a broker without ACLs does.
type AllowAll struct{}

// Authorize allows every action.
func (AllowAll) Authorize(_ *RequestContext, actions []Action) []bool {
	out := make([]bool, len(actions))
	for i := range out {
		out[i] = true
	}
	return out
}

// authzCache holds one request's decisions, so a handler (or a delayed
// operation that rebuilds its response) asks the authorizer once per
// resource however often it checks.
type authzCache struct {
	authorizer Authorizer
	mu         sync.Mutex
	decided    map[Action]bool
}

// authorize asks for every action not decided yet, in one call.
func (c *authzCache) authorize(rc *RequestContext, actions []Action) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ask []Action
	var asked map[Action]struct{}
	for _, a := range actions {
		if _, ok := c.decided[a]; ok {
			continue
		}
		if _, ok := asked[a]; ok {
			continue
		}
		if asked == nil {
			asked = make(map[Action]struct{}, len(actions))
		}
		asked[a] = struct{}{}
		ask = append(ask, a)
	}
	if len(ask) == 0 {
		return
	}
	if c.decided == nil {
		c.decided = make(map[Action]bool, len(ask))
	}
	for i, ok := range c.authorizer.Authorize(rc, ask) {
		c.decided[ask[i]] = ok
	}
}

// Authorized reports whether the request's principal may do op on the
// named resource. Declared actions were decided before the handler ran;
// any other is asked of the authorizer now and remembered.
func (rc *RequestContext) Authorized(op kmsg.ACLOperation, resourceType kmsg.ACLResourceType, name string) bool {
	a := Action{Operation: op, ResourceType: resourceType, Name: name}
	rc.authz.authorize(rc, []Action{a})
	rc.authz.mu.Lock()
	defer rc.authz.mu.Unlock()
	return rc.authz.decided[a]
}

// AuthorizedCluster is Authorized for the CLUSTER resource.
func (rc *RequestContext) AuthorizedCluster(op kmsg.ACLOperation) bool {
	return rc.Authorized(op, kmsg.ACLResourceTypeCluster, ClusterResourceName)
}

// TopicActions is the declaration of an API that needs op on every topic
// it names.
func TopicActions(op kmsg.ACLOperation, topics func(yield func(string))) []Action {
	var out []Action
	topics(func(t string) {
		a := Action{Operation: op, ResourceType: kmsg.ACLResourceTypeTopic, Name: t}
		if len(out) == 0 || out[len(out)-1] != a {
			out = append(out, a)
		}
	})
	return out
}

// AuthorizedTopic is Authorized for a TOPIC.
func (rc *RequestContext) AuthorizedTopic(op kmsg.ACLOperation, topic string) bool {
	return rc.Authorized(op, kmsg.ACLResourceTypeTopic, topic)
}

// AuthorizedGroup is Authorized for a GROUP.
func (rc *RequestContext) AuthorizedGroup(op kmsg.ACLOperation, group string) bool {
	return rc.Authorized(op, kmsg.ACLResourceTypeGroup, group)
}

// AuthorizedAny reports whether the principal may do op on some resource
// of the type (Kafka's authorizeByResourceType): the Action with an empty
// Name, which no resource has.
func (rc *RequestContext) AuthorizedAny(op kmsg.ACLOperation, resourceType kmsg.ACLResourceType) bool {
	return rc.Authorized(op, resourceType, "")
}

// GroupAction declares an API that needs op on the request's group.
func GroupAction(op kmsg.ACLOperation, group func(kmsg.Request) string) func(*RequestContext, kmsg.Request) []Action {
	return func(_ *RequestContext, req kmsg.Request) []Action {
		return []Action{{Operation: op, ResourceType: kmsg.ACLResourceTypeGroup, Name: group(req)}}
	}
}

// ClusterOperations are the operations Kafka defines on the CLUSTER
// (AclEntry.supportedOperations).
var ClusterOperations = []kmsg.ACLOperation{
	kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
	kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter,
	kmsg.ACLOperationDescribe,
}

// AuthorizedOperations is Kafka's authorized-operations bit field: bit op
// is set for each of ops the principal may do on the resource.
func (rc *RequestContext) AuthorizedOperations(resourceType kmsg.ACLResourceType, name string, ops []kmsg.ACLOperation) int32 {
	var bits int32
	for _, op := range ops {
		if rc.Authorized(op, resourceType, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// ClusterAction declares, in an API registration, that the request needs
// op on the CLUSTER; the handler refuses with CLUSTER_AUTHORIZATION_FAILED
// when rc.AuthorizedCluster(op) says no.
func ClusterAction(op kmsg.ACLOperation) func(*RequestContext, kmsg.Request) []Action {
	return func(*RequestContext, kmsg.Request) []Action {
		return []Action{{Operation: op, ResourceType: kmsg.ACLResourceTypeCluster, Name: ClusterResourceName}}
	}
}
