package kafkaapi

// AlterUserScramCredentials (key 51).
//
// Upsertions carry the salted password the client computed (never the
// password); the broker derives the stored and server keys
// (sasl.CredentialFromSaltedPassword) and writes UserScramCredential
// records through the active controller; deletions write
// RemoveUserScramCredential records. There is one result per user, in
// the order users first appear (deletions, then upsertions); a user's
// changes are checked together and none is applied when one is refused:
//
//	empty user name                         UNACCEPTABLE_CREDENTIAL
//	the same user and mechanism twice       DUPLICATE_RESOURCE
//	a mechanism other than SHA-256/512      UNSUPPORTED_SASL_MECHANISM
//	iterations < 4096 or > 16384            UNACCEPTABLE_CREDENTIAL
//	empty salt or salted password           UNACCEPTABLE_CREDENTIAL
//	deleting a credential that is not there RESOURCE_NOT_FOUND
//
// Needs ALTER on the CLUSTER (CLUSTER_AUTHORIZATION_FAILED for every user).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
	"github.com/kbroker/kbroker/security/sasl"
)

func init() {
	register(apiSpec{key: 51, min: 0, max: 0, handle: (*Handlers).handleAlterUserSCRAMCredentials, actions: server.ClusterAction(kmsg.ACLOperationAlter)})
}

func (h *Handlers) handleAlterUserSCRAMCredentials(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)

	var users []string
	changes := map[string][]metadata.ScramChange{}
	userErr := map[string]error{}
	seen := map[metadata.ScramKey]bool{}
	note := func(user string, err error) {
		if _, ok := changes[user]; !ok && userErr[user] == nil {
			users = append(users, user)
		}
		if err != nil && userErr[user] == nil {
			userErr[user] = err
		}
	}
	// add takes one change of user, refusing it (and with it the user's
	// other changes) when it repeats a user and mechanism or is invalid.
	add := func(user string, mechanism int8, build func() (metadata.ScramChange, error)) {
		k := metadata.ScramKey{User: user, Mechanism: mechanism}
		var err error
		var ch metadata.ScramChange
		switch _, known := sasl.ScramMechanismByType(mechanism); {
		case user == "":
			err = fmt.Errorf("%w: username must not be empty", kerr.UnacceptableCredential)
		case seen[k]:
			err = fmt.Errorf("%w: a user credential cannot be altered twice in the same request", kerr.DuplicateResource)
		case !known:
			err = fmt.Errorf("%w: unknown SCRAM mechanism %d", kerr.UnsupportedSaslMechanism, mechanism)
		default:
			ch, err = build()
		}
		seen[k] = true
		note(user, err)
		if err == nil {
			changes[user] = append(changes[user], ch)
		}
	}
	img := h.image()
	for _, d := range req.Deletions {
		add(d.Name, d.Mechanism, func() (metadata.ScramChange, error) {
			if _, ok := img.ScramCredential(d.Name, d.Mechanism); !ok {
				return metadata.ScramChange{}, fmt.Errorf("%w: attempt to delete a user credential that does not exist", kerr.ResourceNotFound)
			}
			return metadata.ScramChange{Delete: true, Credential: metadata.ScramCredential{User: d.Name, Mechanism: d.Mechanism}}, nil
		})
	}
	for _, u := range req.Upsertions {
		add(u.Name, u.Mechanism, func() (metadata.ScramChange, error) { return scramUpsertion(&u) })
	}

	if !rc.AuthorizedCluster(kmsg.ACLOperationAlter) {
		for _, u := range users {
			userErr[u] = kerr.ClusterAuthorizationFailed
		}
	}
	var batch []metadata.ScramChange
	var owner []string
	for _, u := range users {
		if userErr[u] == nil {
			batch = append(batch, changes[u]...)
			for range changes[u] {
				owner = append(owner, u)
			}
		}
	}
	if len(batch) > 0 {
		for i, err := range h.store.AlterScramCredentials(ctx, batch) {
			if err != nil && userErr[owner[i]] == nil {
				userErr[owner[i]] = err
			}
		}
	}
	for _, u := range users {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = u
		r.ErrorCode, r.ErrorMessage = errcode.Of(userErr[u]), errcode.Message(userErr[u])
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

// scramUpsertion checks an upsertion and derives the credential to store.
func scramUpsertion(u *kmsg.AlterUserSCRAMCredentialsRequestUpsertion) (metadata.ScramChange, error) {
	m, _ := sasl.ScramMechanismByType(u.Mechanism)
	switch {
	case u.Iterations < sasl.MinScramIterations:
		return metadata.ScramChange{}, fmt.Errorf("%w: too few iterations (%d < %d)", kerr.UnacceptableCredential, u.Iterations, sasl.MinScramIterations)
	case u.Iterations > sasl.MaxScramIterations:
		return metadata.ScramChange{}, fmt.Errorf("%w: too many iterations (%d > %d)", kerr.UnacceptableCredential, u.Iterations, sasl.MaxScramIterations)
	case len(u.Salt) == 0:
		return metadata.ScramChange{}, fmt.Errorf("%w: salt must not be empty", kerr.UnacceptableCredential)
	case len(u.SaltedPassword) == 0:
		return metadata.ScramChange{}, fmt.Errorf("%w: salted password must not be empty", kerr.UnacceptableCredential)
	}
	cred, err := m.CredentialFromSaltedPassword(u.SaltedPassword, u.Salt, int(u.Iterations))
	if err != nil {
		return metadata.ScramChange{}, fmt.Errorf("%w: %v", kerr.UnacceptableCredential, err)
	}
	return metadata.ScramChange{Credential: MetadataScram(u.Name, cred)}, nil
}

// MetadataScram is the record form of a SCRAM credential.
func MetadataScram(user string, c sasl.ScramCredential) metadata.ScramCredential {
	return metadata.ScramCredential{
		User:       user,
		Mechanism:  c.Mechanism.Type,
		Salt:       c.Salt,
		StoredKey:  c.StoredKey,
		ServerKey:  c.ServerKey,
		Iterations: int32(c.Iterations),
	}
}
