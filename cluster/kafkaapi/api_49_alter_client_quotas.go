package kafkaapi

// AlterClientQuotas (key 49).
//
// Each entry sets or removes quota values of one entity (user,
// client-id, user with client-id, or ip; a null name is the type's
// default). Entries are checked as Kafka's ClientQuotaControlManager
// checks them, each on its own (INVALID_REQUEST: an empty entity, a
// repeated type or key, an empty name, an unknown type or key, ip mixed
// with the others, a value <= 0, a fraction for a byte rate); the valid
// ones are written through the active controller as one ClientQuota
// record per entity, unless validateOnly. Needs ALTER_CONFIGS on the
// CLUSTER (CLUSTER_AUTHORIZATION_FAILED for every entry).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 49, min: 0, max: 1, handle: (*Handlers).handleAlterClientQuotas, actions: server.ClusterAction(kmsg.ACLOperationAlterConfigs)})
}

func (h *Handlers) handleAlterClientQuotas(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	errs := make([]error, len(req.Entries))
	var batch []metadata.QuotaAlteration
	var owner []int
	authorized := rc.AuthorizedCluster(kmsg.ACLOperationAlterConfigs)
	for i := range req.Entries {
		if !authorized {
			errs[i] = kerr.ClusterAuthorizationFailed
			continue
		}
		a, err := quotaAlteration(&req.Entries[i])
		if err != nil {
			errs[i] = err
			continue
		}
		if !req.ValidateOnly {
			batch = append(batch, a)
			owner = append(owner, i)
		}
	}
	if len(batch) > 0 {
		for j, err := range h.store.AlterClientQuotas(ctx, batch) {
			errs[owner[j]] = err
		}
	}
	for i, e := range req.Entries {
		r := kmsg.NewAlterClientQuotasResponseEntry()
		r.ErrorCode, r.ErrorMessage = errcode.Of(errs[i]), errcode.Message(errs[i])
		for _, c := range e.Entity {
			ent := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = c.Type, c.Name
			r.Entity = append(r.Entity, ent)
		}
		resp.Entries = append(resp.Entries, r)
	}
	return resp, nil
}

// quotaAlteration checks one entry and turns it into an alteration.
func quotaAlteration(e *kmsg.AlterClientQuotasRequestEntry) (metadata.QuotaAlteration, error) {
	var a metadata.QuotaAlteration
	for _, c := range e.Entity {
		q, known := a.Entity.Component(c.Type)
		switch {
		case !known:
			return a, fmt.Errorf("%w: unhandled client quota entity type: %s", kerr.InvalidRequest, c.Type)
		case q.Set:
			return a, fmt.Errorf("%w: invalid client quota entity, duplicate entity entry %s", kerr.InvalidRequest, c.Type)
		case c.Name != nil && *c.Name == "":
			return a, fmt.Errorf("%w: empty %s not supported", kerr.InvalidRequest, c.Type)
		}
		*q = metadata.DefaultQuotaName
		if c.Name != nil {
			*q = metadata.Named(*c.Name)
		}
	}
	if err := metadata.CheckQuotaEntity(a.Entity); err != nil {
		return a, err
	}
	seen := map[string]bool{}
	for _, op := range e.Ops {
		if seen[op.Key] {
			return a, fmt.Errorf("%w: duplicate quota key %s", kerr.InvalidRequest, op.Key)
		}
		seen[op.Key] = true
		if op.Remove {
			a.Remove = append(a.Remove, op.Key)
			continue
		}
		if err := metadata.CheckQuotaValue(a.Entity, op.Key, op.Value); err != nil {
			return a, err
		}
		if a.Set == nil {
			a.Set = map[string]float64{}
		}
		a.Set[op.Key] = op.Value
	}
	return a, nil
}
