package metadata

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
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

func testScram(user string, mech int8, fill byte) *ScramCredential {
	return &ScramCredential{User: user, Mechanism: mech, Salt: []byte{fill}, StoredKey: []byte{fill, 1},
		ServerKey: []byte{fill, 2}, Iterations: 4096}
}

// TestFSMSecurityRecords applies ACL and SCRAM records with the
// rejections the FSM makes, and checks determinism and the snapshot round
// trip of the result.
func TestFSMSecurityRecords(t *testing.T) {
	a1 := testACL(1, testTopic, ACLPatternPrefixed, "orders", "User:alice", opWrite, ACLPermissionAllow)
	a1dup := a1
	a1dup.ID = [16]byte{9}
	a2 := testACL(2, testGroup, ACLPatternLiteral, "g", "User:alice", opRead, ACLPermissionAllow)
	clash := a2
	clash.ResourceName = "other" // id 2 again, another entry
	steps := []struct {
		typ     recordType
		payload any
		wantErr error
	}{
		{recSetClusterID, &setClusterIDRecord{ClusterID: "c1", Scram: []*ScramCredential{testScram("admin", 1, 7)}}, nil},
		{recAccessControlEntry, &a1, nil},
		{recAccessControlEntry, &a1dup, nil}, // equal entry: no change
		{recAccessControlEntry, &a2, nil},
		{recAccessControlEntry, &clash, ErrInvalidACL},
		{recAccessControlEntry, &ACL{ResourceType: testTopic}, ErrInvalidACL},
		{recRemoveAccessControlEntry, &removeAccessControlEntryRecord{ID: [16]byte{2}}, nil},
		{recRemoveAccessControlEntry, &removeAccessControlEntryRecord{ID: [16]byte{2}}, ErrUnknownACL},
		{recUserScramCredential, testScram("alice", 1, 1), nil},
		{recUserScramCredential, testScram("alice", 2, 2), nil},
		{recUserScramCredential, testScram("alice", 1, 3), nil}, // replaces
		{recUserScramCredential, &ScramCredential{User: "x", Mechanism: 1}, ErrInvalidConfig},
		{recRemoveUserScramCredential, &ScramKey{User: "alice", Mechanism: 2}, nil},
		{recRemoveUserScramCredential, &ScramKey{User: "alice", Mechanism: 2}, ErrScramNotFound},
		{recSetClusterID, &setClusterIDRecord{ClusterID: "c1", Scram: []*ScramCredential{testScram("late", 1, 8)}}, nil},
	}
	var log [][]byte
	f := newTestFSM()
	for i, st := range steps {
		data := mustEncode(t, st.typ, st.payload)
		log = append(log, data)
		res := f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data})
		err, _ := res.(error)
		if !errors.Is(err, st.wantErr) || (st.wantErr == nil && err != nil) {
			t.Fatalf("step %d (%v): %v, want %v", i+1, st.typ, err, st.wantErr)
		}
	}
	img := f.image()
	if got := img.ACLs.All(); len(got) != 1 || got[0].ID != a1.ID {
		t.Fatalf("ACLs %+v, want only a1", got)
	}
	if img.ACLVersion != 7 {
		t.Errorf("ACLVersion %d, want 7 (the removal)", img.ACLVersion)
	}
	if c, ok := img.ScramCredential("alice", 1); !ok || c.Salt[0] != 3 {
		t.Errorf("alice SHA-256: %+v %v", c, ok)
	}
	if _, ok := img.ScramCredential("alice", 2); ok {
		t.Error("alice SHA-512 still there")
	}
	if _, ok := img.ScramCredential("admin", 1); !ok {
		t.Error("bootstrap credential missing")
	}
	if _, ok := img.ScramCredential("late", 1); ok {
		t.Error("credential of a second SetClusterID applied")
	}

	g := newTestFSM()
	applyAll(g, log)
	if !sameImage(img, g.image()) {
		t.Fatal("the same log gave different images")
	}
	r := newTestFSM()
	if err := r.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, img)))); err != nil {
		t.Fatal(err)
	}
	if !sameImage(img, r.image()) {
		t.Fatalf("restored image differs:\n got %+v\nwant %+v", r.image(), img)
	}
	if got := aclIDs(r.image().ACLs.Matching(testTopic, "orders-1")); !bytes.Equal(got, []byte{1}) {
		t.Errorf("restored index: %v", got)
	}
}

// TestClusterACLsAndScram: ACLs and SCRAM credentials created through a
// follower reach every node, survive the loss of the active controller,
// and the bootstrap credentials are in the first image.
func TestClusterACLsAndScram(t *testing.T) {
	boot := *testScram("admin", 2, 5)
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.BootstrapScram = []ScramCredential{boot} })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := c.follower()
	if _, ok := f.Image().ScramCredential("admin", 2); !ok {
		t.Fatal("bootstrap credential not in the image")
	}
	acls := []ACL{
		testACL(0, testTopic, ACLPatternPrefixed, "orders", "User:alice", opWrite, ACLPermissionAllow),
		testACL(0, testTopic, ACLPatternLiteral, "orders", "User:alice", opRead, ACLPermissionDeny),
	}
	for i, err := range f.CreateACLs(ctx, append(acls, acls[0])) {
		if err != nil {
			t.Fatalf("create acl %d: %v", i, err)
		}
	}
	errs := f.AlterScramCredentials(ctx, []ScramChange{
		{Credential: *testScram("alice", 1, 1)},
		{Delete: true, Credential: ScramCredential{User: "nobody", Mechanism: 1}},
	})
	if errs[0] != nil || !errors.Is(errs[1], ErrScramNotFound) {
		t.Fatalf("alter scram: %v", errs)
	}
	img := c.converged()
	if img.ACLs.Len() != 2 {
		t.Fatalf("%d ACLs, want 2 (the repeated one adds nothing)", img.ACLs.Len())
	}

	old := c.leader()
	for id, s := range c.stores {
		if s == old {
			c.close(id)
		}
	}
	nl := c.leader()
	if nl.Image().ACLs.Len() != 2 {
		t.Fatalf("new leader has %d ACLs", nl.Image().ACLs.Len())
	}
	if _, ok := nl.Image().ScramCredential("alice", 1); !ok {
		t.Fatal("new leader lost alice's credential")
	}
	deny := ACLPermissionDeny
	res := nl.DeleteACLs(ctx, []ACLFilter{{ResourceType: ACLResourceAnyRes, PatternType: ACLFilterAny,
		Operation: ACLFilterAny, Permission: deny}})
	if res[0].Err != nil || len(res[0].Deleted) != 1 || res[0].Deleted[0].Permission != deny {
		t.Fatalf("delete: %+v", res)
	}
	img = c.converged()
	if img.ACLs.Len() != 1 {
		t.Fatalf("%d ACLs after delete, want 1", img.ACLs.Len())
	}
}
