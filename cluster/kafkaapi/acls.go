package kafkaapi

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
)

// The conversions between kmsg's ACL fields and metadata's records, and
// Kafka's validation of them (AclControlManager.validateNewAcl and the
// request classes' filter checks), shared by CreateAcls, DescribeAcls and
// DeleteAcls.

// invalidACL is an ACL or filter Kafka refuses with INVALID_REQUEST.
func invalidACL(format string, args ...any) error {
	return fmt.Errorf("%w: %s", kerr.InvalidRequest, fmt.Sprintf(format, args...))
}

// validResourceType: a concrete type, TOPIC through USER.
func validResourceType(t kmsg.ACLResourceType) bool {
	return t >= kmsg.ACLResourceTypeTopic && t <= kmsg.ACLResourceTypeUser
}

// validOperation: a concrete operation, ALL through DESCRIBE_TOKENS.
func validOperation(o kmsg.ACLOperation) bool {
	return o >= kmsg.ACLOperationAll && o <= kmsg.ACLOperationDescribeTokens
}

func validPermission(p kmsg.ACLPermissionType) bool {
	return p == kmsg.ACLPermissionTypeAllow || p == kmsg.ACLPermissionTypeDeny
}

// newACL checks a CreateAcls creation as Kafka does and returns its record.
func newACL(c *kmsg.CreateACLsRequestCreation) (metadata.ACL, error) {
	switch {
	case !validResourceType(c.ResourceType):
		return metadata.ACL{}, invalidACL("invalid resource type %v", c.ResourceType)
	case c.ResourcePatternType != kmsg.ACLResourcePatternTypeLiteral && c.ResourcePatternType != kmsg.ACLResourcePatternTypePrefixed:
		return metadata.ACL{}, invalidACL("invalid pattern type %v", c.ResourcePatternType)
	case !validOperation(c.Operation):
		return metadata.ACL{}, invalidACL("invalid operation %v", c.Operation)
	case !validPermission(c.PermissionType):
		return metadata.ACL{}, invalidACL("invalid permission type %v", c.PermissionType)
	case c.ResourceName == "":
		return metadata.ACL{}, invalidACL("resource name should not be empty")
	case c.ResourceType == kmsg.ACLResourceTypeCluster && c.ResourceName != server.ClusterResourceName:
		return metadata.ACL{}, invalidACL("the only valid name for the CLUSTER resource is %s", server.ClusterResourceName)
	}
	if typ, name, ok := strings.Cut(c.Principal, ":"); !ok || typ == "" || name == "" {
		return metadata.ACL{}, invalidACL("could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", c.Principal)
	}
	return metadata.ACL{
		ResourceType: int8(c.ResourceType),
		ResourceName: c.ResourceName,
		PatternType:  int8(c.ResourcePatternType),
		Principal:    c.Principal,
		Host:         c.Host,
		Operation:    int8(c.Operation),
		Permission:   int8(c.PermissionType),
	}, nil
}

// aclFilter checks a DescribeAcls or DeleteAcls filter (no UNKNOWN in any
// field) and returns it in metadata's form.
func aclFilter(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string,
	op kmsg.ACLOperation, perm kmsg.ACLPermissionType) (metadata.ACLFilter, error) {
	switch {
	case rt != kmsg.ACLResourceTypeAny && !validResourceType(rt):
		return metadata.ACLFilter{}, invalidACL("invalid resource type %v in filter", rt)
	case pt < kmsg.ACLResourcePatternTypeAny || pt > kmsg.ACLResourcePatternTypePrefixed:
		return metadata.ACLFilter{}, invalidACL("invalid pattern type %v in filter", pt)
	case op != kmsg.ACLOperationAny && !validOperation(op):
		return metadata.ACLFilter{}, invalidACL("invalid operation %v in filter", op)
	case perm != kmsg.ACLPermissionTypeAny && !validPermission(perm):
		return metadata.ACLFilter{}, invalidACL("invalid permission type %v in filter", perm)
	}
	return metadata.ACLFilter{
		ResourceType: int8(rt),
		ResourceName: name,
		PatternType:  int8(pt),
		Principal:    principal,
		Host:         host,
		Operation:    int8(op),
		Permission:   int8(perm),
	}, nil
}

// errSecurityDisabled answers the ACL APIs of a broker without an
// authorizer, as Kafka does: there are no ACLs to manage.
var errSecurityDisabled = fmt.Errorf("%w: no authorizer is configured (authorizer.class.name)", kerr.SecurityDisabled)

// aclsEnabled reports whether an ACL authorizer is configured.
func (h *Handlers) aclsEnabled() bool { return h.cfg.AuthorizerClassName != "" }
