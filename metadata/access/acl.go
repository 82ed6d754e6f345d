package access

import (
	"cmp"
	"maps"
	"slices"
)

// ACL codes as Kafka numbers them on the wire (kmsg.ACLResourceType,
// ACLResourcePatternType, ACLPermissionType, ACLOperation). The metadata
// layer keeps them as plain numbers; cluster/acl interprets them.
const (
	ACLPatternLiteral  int8 = 3
	ACLPatternPrefixed int8 = 4

	ACLPermissionDeny  int8 = 2
	ACLPermissionAllow int8 = 3
)

// ACLWildcard is the resource name of a LITERAL ACL that matches every
// resource of its type, and the host that matches every host.
const ACLWildcard = "*"

// ACL is one access control entry (Kafka's AccessControlEntryRecord): a
// resource pattern (type, name, literal or prefixed), a principal
// ("User:alice", or "User:*" for everybody), a host ("*" for any), an
// operation and ALLOW or DENY. ID is chosen by the controller. Its JSON is
// the payload of the AccessControlEntry record and of snapshots.
type ACL struct {
	ID           [16]byte `json:"id"`
	ResourceType int8     `json:"resourceType"`
	ResourceName string   `json:"resourceName"`
	PatternType  int8     `json:"patternType"`
	Principal    string   `json:"principal"`
	Host         string   `json:"host"`
	Operation    int8     `json:"operation"`
	Permission   int8     `json:"permission"`
}

// sameEntry reports whether a and b are the same entry but for their id.
func (a *ACL) sameEntry(b *ACL) bool {
	x, y := *a, *b
	x.ID, y.ID = [16]byte{}, [16]byte{}
	return x == y
}

// aclPattern is the index key of an ACL: its resource pattern.
type aclPattern struct {
	resourceType int8
	patternType  int8
	name         string
}

// ACLs is the immutable set of ACLs of an image, indexed by resource
// pattern so that the ACLs bearing on one resource are found with a
// lookup per pattern that could match it (the literal name, the literal
// wildcard, each prefix of the name that some PREFIXED ACL uses).
type ACLs struct {
	byID map[[16]byte]*ACL
	// byPattern holds each pattern's ACLs sorted by id.
	byPattern map[aclPattern][]*ACL
	// prefixLens holds, per resource type, the lengths of the names of its
	// PREFIXED patterns, so a lookup tries only those prefixes.
	prefixLens map[int8][]int
}

// IndexACLs returns the index of the ACLs of byID, which it keeps: the
// caller must not modify the map nor the ACLs afterwards.
func IndexACLs(byID map[[16]byte]*ACL) *ACLs {
	return newACLs(byID)
}

func newACLs(byID map[[16]byte]*ACL) *ACLs {
	a := &ACLs{byID: byID, byPattern: map[aclPattern][]*ACL{}, prefixLens: map[int8][]int{}}
	if a.byID == nil {
		a.byID = map[[16]byte]*ACL{}
	}
	for _, acl := range a.byID {
		k := aclPattern{acl.ResourceType, acl.PatternType, acl.ResourceName}
		a.byPattern[k] = append(a.byPattern[k], acl)
		if acl.PatternType == ACLPatternPrefixed {
			l := len(acl.ResourceName)
			if !slices.Contains(a.prefixLens[acl.ResourceType], l) {
				a.prefixLens[acl.ResourceType] = append(a.prefixLens[acl.ResourceType], l)
			}
		}
	}
	for k, list := range a.byPattern {
		slices.SortFunc(list, compareACLID)
		a.byPattern[k] = list
	}
	for _, lens := range a.prefixLens {
		slices.Sort(lens)
	}
	return a
}

func compareACLID(x, y *ACL) int {
	return slices.Compare(x.ID[:], y.ID[:])
}

// Len is the number of ACLs.
func (a *ACLs) Len() int { return len(a.byID) }

// Get returns the ACL with this id.
func (a *ACLs) Get(id [16]byte) (*ACL, bool) {
	acl, ok := a.byID[id]
	return acl, ok
}

// All returns every ACL, sorted by resource type, pattern type, name and
// id (a stable order for DescribeAcls and snapshots).
func (a *ACLs) All() []*ACL {
	out := slices.Collect(maps.Values(a.byID))
	slices.SortFunc(out, func(x, y *ACL) int {
		return cmp.Or(cmp.Compare(x.ResourceType, y.ResourceType),
			cmp.Compare(x.PatternType, y.PatternType),
			cmp.Compare(x.ResourceName, y.ResourceName),
			compareACLID(x, y))
	})
	return out
}

// Matching returns the ACLs whose resource pattern matches the resource
// (resourceType, name): LITERAL ACLs on name or on "*", and PREFIXED ACLs
// whose name is a prefix of name. The result must not be modified.
func (a *ACLs) Matching(resourceType int8, name string) []*ACL {
	var out []*ACL
	out = append(out, a.byPattern[aclPattern{resourceType, ACLPatternLiteral, name}]...)
	if name != ACLWildcard {
		out = append(out, a.byPattern[aclPattern{resourceType, ACLPatternLiteral, ACLWildcard}]...)
	}
	for _, l := range a.prefixLens[resourceType] {
		if l > len(name) {
			break
		}
		out = append(out, a.byPattern[aclPattern{resourceType, ACLPatternPrefixed, name[:l]}]...)
	}
	return out
}

// OfType returns every ACL on resources of this type, in the order of All.
func (a *ACLs) OfType(resourceType int8) []*ACL {
	var out []*ACL
	for _, acl := range a.All() {
		if acl.ResourceType == resourceType {
			out = append(out, acl)
		}
	}
	return out
}

// Find returns the ACL equal to acl but for its id.
func (a *ACLs) Find(acl *ACL) (*ACL, bool) {
	for _, x := range a.byPattern[aclPattern{acl.ResourceType, acl.PatternType, acl.ResourceName}] {
		if x.sameEntry(acl) {
			return x, true
		}
	}
	return nil, false
}

// With returns a copy holding acl too; a is unchanged.
func (a *ACLs) With(acl *ACL) *ACLs {
	m := maps.Clone(a.byID)
	m[acl.ID] = acl
	return newACLs(m)
}

// Without returns a copy without the ACL of this id; a is unchanged.
func (a *ACLs) Without(id [16]byte) *ACLs {
	m := maps.Clone(a.byID)
	delete(m, id)
	return newACLs(m)
}

// ACL filter codes, Kafka's: ANY (1) in any field matches every value;
// MATCH (2) as a pattern type matches the patterns that would apply to the
// named resource.
const (
	ACLFilterAny      int8 = 1
	ACLPatternMatch   int8 = 2
	ACLResourceAnyRes int8 = 1 // resource type ANY
)

// ACLFilter selects ACLs as DescribeAcls and DeleteAcls filters do. A nil
// name, principal or host matches any.
type ACLFilter struct {
	ResourceType int8    `json:"resourceType"`
	ResourceName *string `json:"resourceName,omitempty"`
	PatternType  int8    `json:"patternType"`
	Principal    *string `json:"principal,omitempty"`
	Host         *string `json:"host,omitempty"`
	Operation    int8    `json:"operation"`
	Permission   int8    `json:"permission"`
}

// Matches reports whether acl passes the filter, with Kafka's
// AclBindingFilter semantics.
func (f *ACLFilter) Matches(acl *ACL) bool {
	if f.ResourceType != ACLResourceAnyRes && f.ResourceType != acl.ResourceType {
		return false
	}
	if !f.matchesPattern(acl) {
		return false
	}
	return (f.Principal == nil || *f.Principal == acl.Principal) &&
		(f.Host == nil || *f.Host == acl.Host) &&
		(f.Operation == ACLFilterAny || f.Operation == acl.Operation) &&
		(f.Permission == ACLFilterAny || f.Permission == acl.Permission)
}

func (f *ACLFilter) matchesPattern(acl *ACL) bool {
	switch f.PatternType {
	case ACLFilterAny:
		return f.ResourceName == nil || *f.ResourceName == acl.ResourceName
	case ACLPatternMatch:
		if f.ResourceName == nil {
			return true
		}
		name := *f.ResourceName
		switch acl.PatternType {
		case ACLPatternLiteral:
			return acl.ResourceName == name || acl.ResourceName == ACLWildcard
		case ACLPatternPrefixed:
			return len(name) >= len(acl.ResourceName) && name[:len(acl.ResourceName)] == acl.ResourceName
		}
		return false
	default:
		return f.PatternType == acl.PatternType &&
			(f.ResourceName == nil || *f.ResourceName == acl.ResourceName)
	}
}

// NewACLs returns an index of acls (their ids must differ), for images
// built outside the log (tests of the authorizer).
func NewACLs(acls []ACL) *ACLs {
	byID := make(map[[16]byte]*ACL, len(acls))
	for i := range acls {
		a := acls[i]
		byID[a.ID] = &a
	}
	return newACLs(byID)
}
