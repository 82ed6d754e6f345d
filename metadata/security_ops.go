package metadata

import (
	"context"
	"fmt"

	"github.com/hashicorp/raft"
)

// CreateACLs adds ACLs (CreateAcls); one result per ACL, nil for success.
// The controller gives each a fresh id; an ACL equal to an existing one is
// a success that adds nothing, as in Kafka. Validation of the codes is the
// request handler's (it knows Kafka's enums).
func (s *Store) CreateACLs(ctx context.Context, acls []ACL) []error {
	res, err := call(ctx, s, opCreateACLs, acls)
	return results(len(acls), res, err)
}

var opCreateACLs = defineOp("CreateACLs", nil,
	func(s *Store, ctx context.Context, acls []ACL) (errorList, error) {
		errs := make(errorList, len(acls))
		futures := make([]raft.ApplyFuture, len(acls))
		img := s.Image()
		for i := range acls {
			acl := acls[i]
			if _, ok := img.ACLs.Find(&acl); ok {
				continue
			}
			acl.ID = randomACLID(img)
			futures[i], errs[i] = s.start(ctx, recAccessControlEntry, &acl)
		}
		for i, f := range futures {
			if f != nil {
				_, errs[i] = s.finish(ctx, f)
			}
		}
		return errs, nil
	})

// randomACLID returns an id no ACL of img uses.
func randomACLID(img *Image) [16]byte {
	for {
		id := randomUUID(nil)
		if _, used := img.ACLs.Get(id); !used {
			return id
		}
	}
}

// DeleteACLsResult is the outcome of one DeleteAcls filter: the ACLs it
// matched and removed, or the error that stopped it.
type DeleteACLsResult struct {
	Deleted []ACL `json:"deleted"`
	Err     error `json:"-"`
}

// deleteACLsResult carries a DeleteACLsResult over the controller RPC.
type deleteACLsResult struct {
	Deleted []ACL      `json:"deleted"`
	Err     *wireError `json:"error,omitempty"`
}

// DeleteACLs removes the ACLs each filter matches in the active
// controller's image; one result per filter. An ACL matched by several
// filters is reported by the first.
func (s *Store) DeleteACLs(ctx context.Context, filters []ACLFilter) []DeleteACLsResult {
	res, err := call(ctx, s, opDeleteACLs, filters)
	out := make([]DeleteACLsResult, len(filters))
	for i := range out {
		switch {
		case err != nil:
			out[i].Err = err
		case len(res) != len(filters):
			out[i].Err = fmt.Errorf("metadata: %d results for %d filters", len(res), len(filters))
		default:
			out[i].Deleted = res[i].Deleted
			if res[i].Err != nil {
				out[i].Err = fromWire(res[i].Err)
			}
		}
	}
	return out
}

var opDeleteACLs = defineOp("DeleteACLs", nil,
	func(s *Store, ctx context.Context, filters []ACLFilter) ([]deleteACLsResult, error) {
		img := s.Image()
		out := make([]deleteACLsResult, len(filters))
		futures := make([][]raft.ApplyFuture, len(filters))
		taken := map[[16]byte]bool{}
		for i := range filters {
			out[i].Deleted = []ACL{}
			for _, acl := range img.ACLs.All() {
				if taken[acl.ID] || !filters[i].Matches(acl) {
					continue
				}
				taken[acl.ID] = true
				f, err := s.start(ctx, recRemoveAccessControlEntry, &removeAccessControlEntryRecord{ID: acl.ID})
				if err != nil {
					out[i].Err = toWire(err)
					break
				}
				futures[i] = append(futures[i], f)
				out[i].Deleted = append(out[i].Deleted, *acl)
			}
		}
		for i, fs := range futures {
			for _, f := range fs {
				if _, err := s.finish(ctx, f); err != nil && out[i].Err == nil {
					out[i].Err = toWire(err)
				}
			}
		}
		return out, nil
	})

// ScramChange is one change of AlterUserScramCredentials: Credential set
// (an upsertion) or, with Delete, the credential of Credential.User and
// Credential.Mechanism removed.
type ScramChange struct {
	Delete     bool            `json:"delete,omitempty"`
	Credential ScramCredential `json:"credential"`
}

// AlterScramCredentials applies upsertions and deletions of SCRAM
// credentials; one result per change. Deleting a credential that does not
// exist fails with ErrScramNotFound.
func (s *Store) AlterScramCredentials(ctx context.Context, changes []ScramChange) []error {
	res, err := call(ctx, s, opAlterScram, changes)
	return results(len(changes), res, err)
}

var opAlterScram = defineOp("AlterScramCredentials", nil,
	func(s *Store, ctx context.Context, changes []ScramChange) (errorList, error) {
		img := s.Image()
		errs := make(errorList, len(changes))
		futures := make([]raft.ApplyFuture, len(changes))
		for i := range changes {
			c := &changes[i].Credential
			if changes[i].Delete {
				k := c.Key()
				if _, ok := img.Scram[k]; !ok {
					errs[i] = fmt.Errorf("%w: user %q", ErrScramNotFound, c.User)
					continue
				}
				futures[i], errs[i] = s.start(ctx, recRemoveUserScramCredential, &k)
				continue
			}
			futures[i], errs[i] = s.start(ctx, recUserScramCredential, c)
		}
		for i, f := range futures {
			if f != nil {
				_, errs[i] = s.finish(ctx, f)
			}
		}
		return errs, nil
	})

// noteBootstrapScramIgnored logs once that Config.BootstrapScram was not
// written because the cluster existed already.
func (s *Store) noteBootstrapScramIgnored() {
	if len(s.cfg.BootstrapScram) == 0 || s.bootstrapScramWritten.Load() || s.bootstrapScramNoted.Swap(true) {
		return
	}
	s.log.Info("bootstrap SCRAM credentials ignored: they are written only when the cluster is created, and this cluster exists",
		"clusterId", s.Image().ClusterID, "count", len(s.cfg.BootstrapScram))
}
