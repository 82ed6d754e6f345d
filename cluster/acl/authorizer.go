package acl

import (
	"fmt"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/metadata"
)

// Class names of authorizer.class.name this package implements: KRaft's
// StandardAuthorizer and, for configurations written for ZooKeeper-mode
// brokers, the legacy AclAuthorizer, which decides the same way.
const (
	StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	LegacyAuthorizerClass   = "kafka.security.authorizer.AclAuthorizer"
)

// IsKnownClass reports whether name is an authorizer class this package
// implements.
func IsKnownClass(name string) bool {
	return name == StandardAuthorizerClass || name == LegacyAuthorizerClass
}

// WildcardPrincipal is the ACL principal that matches every principal.
const WildcardPrincipal = "User:*"

// maxCached and maxCachedBytes bound the cached decisions: their number
// and the bytes of the names in their keys (a client names resources of
// up to 32 KiB).
const (
	maxCached      = 100_000
	maxCachedBytes = 16 << 20
)

// Config configures an Authorizer.
type Config struct {
	// Image returns the current metadata image; it is called on every
	// decision that is not cached.
	Image func() *metadata.Image
	// SuperUsers are principals ("User:admin") allowed everything.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound: allow an action on a resource no ACL
	// matches (allow.everyone.if.no.acl.found).
	AllowEveryoneIfNoACLFound bool
}

// Authorizer decides actions from the ACLs of the metadata image. It is
// safe for concurrent use.
type Authorizer struct {
	image         func() *metadata.Image
	superUsers    map[string]bool
	allowEveryone bool

	mu         sync.Mutex
	version    uint64 // ACL version the cache was filled at
	cache      map[cacheKey]bool
	cacheBytes int // bytes of the strings of cache's keys
}

type cacheKey struct {
	principal, host string
	op              kmsg.ACLOperation
	resourceType    kmsg.ACLResourceType
	name            string
	any             bool // AuthorizeAny
}

// New returns an Authorizer.
func New(cfg Config) *Authorizer {
	a := &Authorizer{image: cfg.Image, superUsers: map[string]bool{}, allowEveryone: cfg.AllowEveryoneIfNoACLFound}
	for _, u := range cfg.SuperUsers {
		a.superUsers[u] = true
	}
	return a
}

// ParseSuperUsers parses super.users: principals separated by ';', each
// "Type:name".
func ParseSuperUsers(v string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(v, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
			return nil, fmt.Errorf("super.users: %q is not Type:name", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// Authorize reports whether principal, connected from host, may do op on
// the resource of resourceType named name.
func (a *Authorizer) Authorize(principal, host string, op kmsg.ACLOperation, resourceType kmsg.ACLResourceType, name string) bool {
	if a.superUsers[principal] {
		return true
	}
	k := cacheKey{principal: principal, host: host, op: op, resourceType: resourceType, name: name}
	return a.cached(k, func(img *metadata.Image) bool {
		return a.decide(img, principal, host, op, resourceType, name)
	})
}

// AuthorizeAny reports whether principal may do op on some resource of
// resourceType (Kafka's authorizeByResourceType; see the package doc).
func (a *Authorizer) AuthorizeAny(principal, host string, op kmsg.ACLOperation, resourceType kmsg.ACLResourceType) bool {
	if a.superUsers[principal] {
		return true
	}
	k := cacheKey{principal: principal, host: host, op: op, resourceType: resourceType, any: true}
	return a.cached(k, func(img *metadata.Image) bool {
		return a.decideAny(img, principal, host, op, resourceType)
	})
}

// cached returns the cached decision for k at the image's ACL version, or
// computes it with decide and caches it.
func (a *Authorizer) cached(k cacheKey, decide func(*metadata.Image) bool) bool {
	img := a.image()
	a.mu.Lock()
	if a.version != img.ACLVersion || a.cache == nil {
		a.version, a.cache, a.cacheBytes = img.ACLVersion, map[cacheKey]bool{}, 0
	}
	if ok, hit := a.cache[k]; hit {
		a.mu.Unlock()
		return ok
	}
	a.mu.Unlock()
	ok := decide(img)
	a.mu.Lock()
	if a.version == img.ACLVersion {
		size := len(k.principal) + len(k.host) + len(k.name)
		if len(a.cache) >= maxCached || a.cacheBytes+size > maxCachedBytes {
			a.cache, a.cacheBytes = map[cacheKey]bool{}, 0
		}
		a.cache[k] = ok
		a.cacheBytes += size
	}
	a.mu.Unlock()
	return ok
}

// decide is the decision of the package doc, steps 2 to 6.
func (a *Authorizer) decide(img *metadata.Image, principal, host string, op kmsg.ACLOperation, resourceType kmsg.ACLResourceType, name string) bool {
	acls := img.ACLs.Matching(int8(resourceType), name)
	if len(acls) == 0 {
		return a.allowEveryone
	}
	allowed := false
	for _, acl := range acls {
		if !applies(acl, principal, host) {
			continue
		}
		switch acl.Permission {
		case metadata.ACLPermissionDeny:
			if denies(acl, op) {
				return false
			}
		case metadata.ACLPermissionAllow:
			if allows(acl, op) {
				allowed = true
			}
		}
	}
	return allowed
}

// hardcodedName is a resource name no ACL should name, asked about first
// by decideAny as Kafka does, so that super users, the wildcard ACLs and
// allow.everyone.if.no.acl.found count.
const hardcodedName = "hardcode"

func (a *Authorizer) decideAny(img *metadata.Image, principal, host string, op kmsg.ACLOperation, resourceType kmsg.ACLResourceType) bool {
	if a.decide(img, principal, host, op, resourceType, hardcodedName) {
		return true
	}
	denyLiteral := map[string]bool{}
	var denyPrefixes []string
	var allow []*metadata.ACL
	for _, acl := range img.ACLs.OfType(int8(resourceType)) {
		if !applies(acl, principal, host) {
			continue
		}
		switch {
		case acl.Permission == metadata.ACLPermissionDeny && denies(acl, op):
			if acl.PatternType == metadata.ACLPatternLiteral {
				if acl.ResourceName == metadata.ACLWildcard {
					return false
				}
				denyLiteral[acl.ResourceName] = true
			} else {
				denyPrefixes = append(denyPrefixes, acl.ResourceName)
			}
		case acl.Permission == metadata.ACLPermissionAllow && allows(acl, op):
			allow = append(allow, acl)
		}
	}
	for _, acl := range allow {
		if acl.PatternType == metadata.ACLPatternLiteral && denyLiteral[acl.ResourceName] {
			continue
		}
		covered := false
		for _, p := range denyPrefixes {
			if strings.HasPrefix(acl.ResourceName, p) {
				covered = true
				break
			}
		}
		if !covered {
			return true
		}
	}
	return false
}

// applies reports whether acl is about this principal and host.
func applies(acl *metadata.ACL, principal, host string) bool {
	return (acl.Principal == principal || acl.Principal == WildcardPrincipal) &&
		(acl.Host == host || acl.Host == metadata.ACLWildcard)
}

// denies reports whether a DENY acl covers op: the same operation or ALL.
func denies(acl *metadata.ACL, op kmsg.ACLOperation) bool {
	o := kmsg.ACLOperation(acl.Operation)
	return o == op || o == kmsg.ACLOperationAll
}

// allows reports whether an ALLOW acl grants op: the same operation, ALL,
// or an operation that implies op.
func allows(acl *metadata.ACL, op kmsg.ACLOperation) bool {
	o := kmsg.ACLOperation(acl.Operation)
	if o == op || o == kmsg.ACLOperationAll {
		return true
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		return o == kmsg.ACLOperationRead || o == kmsg.ACLOperationWrite ||
			o == kmsg.ACLOperationDelete || o == kmsg.ACLOperationAlter
	case kmsg.ACLOperationDescribeConfigs:
		return o == kmsg.ACLOperationAlterConfigs
	}
	return false
}
