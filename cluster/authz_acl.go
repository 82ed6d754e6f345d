package cluster

import (
	"fmt"
	"net"

	"github.com/kbroker/kbroker/cluster/acl"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/metadata"
)

// aclAuthorizer is the cluster's Authorizer over package acl: it answers
// from the ACLs of this node's metadata image, for the request's principal
// and the IP address it connects from.
type aclAuthorizer struct {
	acls *acl.Authorizer
	// principalOf is the principal an action is decided for: the
	// request's, except in tests, which name principals without SASL.
	principalOf func(rc *server.RequestContext) server.Principal
}

func requestPrincipal(rc *server.RequestContext) server.Principal { return rc.Principal }

// Authorize implements Authorizer. An action with an empty Name asks
// whether the principal may do the operation on any resource of the type
// (see Action).
func (a *aclAuthorizer) Authorize(rc *server.RequestContext, actions []server.Action) []bool {
	principal := a.principalOf(rc).String()
	host := remoteHost(rc.Remote)
	out := make([]bool, len(actions))
	for i, act := range actions {
		if act.Name == "" {
			out[i] = a.acls.AuthorizeAny(principal, host, act.Operation, act.ResourceType)
			continue
		}
		out[i] = a.acls.Authorize(principal, host, act.Operation, act.ResourceType, act.Name)
	}
	return out
}

// remoteHost is the host ACLs name: the client's IP address.
func remoteHost(addr net.Addr) string {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.IP.String()
	case nil:
		return ""
	}
	if h, _, err := net.SplitHostPort(addr.String()); err == nil {
		return h
	}
	return addr.String()
}

// newAuthorizer returns the Authorizer authorizer.class.name asks for:
// AllowAll when it is empty, the ACL authorizer over image for Kafka's
// StandardAuthorizer (or the legacy AclAuthorizer), and an error for any
// other class, so a broker never starts without the authorization its
// operator configured.
func newAuthorizer(cfg *config.Config, image func() *metadata.Image) (server.Authorizer, error) {
	switch {
	case cfg.AuthorizerClassName == "":
		return server.AllowAll{}, nil
	case acl.IsKnownClass(cfg.AuthorizerClassName):
		return &aclAuthorizer{
			acls: acl.New(acl.Config{
				Image:                     image,
				SuperUsers:                cfg.SuperUsers,
				AllowEveryoneIfNoACLFound: cfg.AllowEveryoneIfNoACLFound,
			}),
			principalOf: requestPrincipal,
		}, nil
	}
	return nil, fmt.Errorf("authorizer.class.name %q: unknown authorizer class", cfg.AuthorizerClassName)
}

// image is the node's current metadata image, or an empty one before the
// metadata store is open. Run opens the store before it starts serving,
// so the connection goroutines that call this see n.store set.
func (n *Node) image() *metadata.Image {
	if n.store != nil {
		return n.store.Image()
	}
	return &metadata.Image{ACLs: metadata.NewACLs(nil)}
}

// installAuthorizer sets the request server's authorizer from the config.
func (n *Node) installAuthorizer() error {
	a, err := newAuthorizer(&n.cfg, n.image)
	if err != nil {
		return err
	}
	n.server.SetAuthorizer(a)
	return nil
}
