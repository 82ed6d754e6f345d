package metadata

import (
	"fmt"
	"maps"
	"slices"
)

// applyACL adds an ACL. An entry equal to one the image holds (but for
// its id) changes nothing, as Kafka treats creating an existing ACL; an
// id already used by a different entry is refused.
func applyACL(img *Image, r *ACL) error {
	if r.ID == ([16]byte{}) {
		return fmt.Errorf("%w: zero id", ErrInvalidACL)
	}
	if _, ok := img.ACLs.Find(r); ok {
		return nil
	}
	if _, ok := img.ACLs.Get(r.ID); ok {
		return fmt.Errorf("%w: id %x already used", ErrInvalidACL, r.ID)
	}
	acl := *r
	img.ACLs = img.ACLs.With(&acl)
	img.ACLVersion = img.Offset
	return nil
}

func applyRemoveACL(img *Image, r *removeAccessControlEntryRecord) error {
	if _, ok := img.ACLs.Get(r.ID); !ok {
		return fmt.Errorf("%w: %x", ErrUnknownACL, r.ID)
	}
	img.ACLs = img.ACLs.Without(r.ID)
	img.ACLVersion = img.Offset
	return nil
}

// applyScram sets a credential. The FSM checks only what keeps the image
// usable (a user name and the key material); mechanism and iteration
// bounds are checked by the request handler, which knows the mechanisms.
func applyScram(img *Image, r *ScramCredential) error {
	if err := checkScram(r); err != nil {
		return err
	}
	c := *r
	c.Salt, c.StoredKey, c.ServerKey = slices.Clone(r.Salt), slices.Clone(r.StoredKey), slices.Clone(r.ServerKey)
	img.withScram(&c)
	return nil
}

// checkScram is what the FSM requires of a credential.
func checkScram(r *ScramCredential) error {
	if r.User == "" || len(r.Salt) == 0 || len(r.StoredKey) == 0 || len(r.ServerKey) == 0 || r.Iterations <= 0 {
		return fmt.Errorf("%w: incomplete scram credential for %q", ErrInvalidConfig, r.User)
	}
	return nil
}

func applyRemoveScram(img *Image, r *ScramKey) error {
	if _, ok := img.Scram[*r]; !ok {
		return fmt.Errorf("%w: %s mechanism %d", ErrScramNotFound, r.User, r.Mechanism)
	}
	img.Scram = maps.Clone(img.Scram)
	delete(img.Scram, *r)
	if len(img.Scram) == 0 {
		img.Scram = nil // as a snapshot without credentials restores it
	}
	return nil
}
