package access

import (
	"bytes"
	"slices"
	"testing"
)

// Kafka codes used by the tests.
const (
	testTopic = 2
	testGroup = 3
	opRead    = 3
	opWrite   = 4
)

func testACL(id byte, rt int8, pattern int8, name, principal string, op, perm int8) ACL {
	return ACL{ID: [16]byte{id}, ResourceType: rt, ResourceName: name, PatternType: pattern,
		Principal: principal, Host: "*", Operation: op, Permission: perm}
}

func aclIDs(acls []*ACL) []byte {
	var out []byte
	for _, a := range acls {
		out = append(out, a.ID[0])
	}
	slices.Sort(out)
	return out
}

func TestACLsMatching(t *testing.T) {
	acls := NewACLs(nil)
	for _, a := range []ACL{
		testACL(1, testTopic, ACLPatternLiteral, "orders", "User:alice", opRead, ACLPermissionAllow),
		testACL(2, testTopic, ACLPatternLiteral, "*", "User:*", opRead, ACLPermissionAllow),
		testACL(3, testTopic, ACLPatternPrefixed, "ord", "User:bob", opWrite, ACLPermissionAllow),
		testACL(4, testTopic, ACLPatternPrefixed, "orders-", "User:bob", opWrite, ACLPermissionDeny),
		testACL(5, testGroup, ACLPatternLiteral, "orders", "User:alice", opRead, ACLPermissionAllow),
		testACL(6, testTopic, ACLPatternLiteral, "orders-eu", "User:carol", opRead, ACLPermissionAllow),
	} {
		acls = acls.With(&a)
	}
	for _, tc := range []struct {
		rt   int8
		name string
		want []byte
	}{
		{testTopic, "orders", []byte{1, 2, 3}},
		{testTopic, "orders-eu", []byte{2, 3, 4, 6}},
		{testTopic, "or", []byte{2}},
		{testTopic, "payments", []byte{2}},
		{testTopic, "*", []byte{2}},
		{testGroup, "orders", []byte{5}},
		{testGroup, "ord", nil},
	} {
		if got := aclIDs(acls.Matching(tc.rt, tc.name)); !bytes.Equal(got, tc.want) {
			t.Errorf("Matching(%d, %q) = %v, want %v", tc.rt, tc.name, got, tc.want)
		}
	}
	acls = acls.Without([16]byte{3})
	if got := aclIDs(acls.Matching(testTopic, "orders")); !bytes.Equal(got, []byte{1, 2}) {
		t.Errorf("after removing 3: %v", got)
	}
	if acls.Len() != 5 {
		t.Errorf("Len %d, want 5", acls.Len())
	}
}

func TestACLFilter(t *testing.T) {
	str := func(s string) *string { return &s }
	lit := testACL(1, testTopic, ACLPatternLiteral, "orders", "User:alice", opRead, ACLPermissionAllow)
	wild := testACL(2, testTopic, ACLPatternLiteral, "*", "User:alice", opRead, ACLPermissionAllow)
	pre := testACL(3, testTopic, ACLPatternPrefixed, "ord", "User:bob", opWrite, ACLPermissionDeny)
	any := ACLFilter{ResourceType: ACLResourceAnyRes, PatternType: ACLFilterAny, Operation: ACLFilterAny, Permission: ACLFilterAny}
	with := func(f func(*ACLFilter)) ACLFilter { c := any; f(&c); return c }
	for _, tc := range []struct {
		name   string
		filter ACLFilter
		want   []byte
	}{
		{"any", any, []byte{1, 2, 3}},
		{"group type", with(func(f *ACLFilter) { f.ResourceType = testGroup }), nil},
		{"any pattern named", with(func(f *ACLFilter) { f.ResourceName = str("orders") }), []byte{1}},
		{"literal", with(func(f *ACLFilter) { f.PatternType = ACLPatternLiteral }), []byte{1, 2}},
		{"prefixed named", with(func(f *ACLFilter) { f.PatternType = ACLPatternPrefixed; f.ResourceName = str("ord") }), []byte{3}},
		{"prefixed wrong name", with(func(f *ACLFilter) { f.PatternType = ACLPatternPrefixed; f.ResourceName = str("orders") }), nil},
		{"match", with(func(f *ACLFilter) { f.PatternType = ACLPatternMatch; f.ResourceName = str("orders") }), []byte{1, 2, 3}},
		{"match other", with(func(f *ACLFilter) { f.PatternType = ACLPatternMatch; f.ResourceName = str("payments") }), []byte{2}},
		{"principal", with(func(f *ACLFilter) { f.Principal = str("User:bob") }), []byte{3}},
		{"host", with(func(f *ACLFilter) { f.Host = str("10.0.0.1") }), nil},
		{"operation", with(func(f *ACLFilter) { f.Operation = opRead }), []byte{1, 2}},
		{"permission", with(func(f *ACLFilter) { f.Permission = ACLPermissionDeny }), []byte{3}},
	} {
		var got []byte
		for _, a := range []*ACL{&lit, &wild, &pre} {
			if tc.filter.Matches(a) {
				got = append(got, a.ID[0])
			}
		}
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%s: matched %v, want %v", tc.name, got, tc.want)
		}
	}
}
