package kafkaapi

// UpdateFeatures (key 57).
//
// Finalizes feature levels cluster-wide (KIP-584, KIP-778): the request goes to the active
// controller (metadata.Store.UpdateFeatures forwards it from any node),
// which checks each update against the finalized levels, itself, every
// registered broker and every voter, and writes the valid ones. v0 says
// a downgrade with AllowDowngrade (a safe downgrade); v1 names the
// UpgradeType (1 upgrade, 2 safe downgrade, 3 unsafe downgrade) and adds
// ValidateOnly; v2 answers with the top-level error only (the first
// failed update's), as Kafka 4.0 does.
//
// It needs ALTER on the CLUSTER: without it every update fails with
// CLUSTER_AUTHORIZATION_FAILED. A failed update answers
// INVALID_UPDATE_VERSION with Kafka's message naming the feature, the
// level and the node that does not support it.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata/features"
)

func init() {
	register(apiSpec{key: 57, min: 0, max: 2, handle: (*Handlers).handleUpdateFeatures,
		actions: server.ClusterAction(kmsg.ACLOperationAlter)})
}

func (h *Handlers) handleUpdateFeatures(ctx context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	fail := func(code int16, msg string) (kmsg.Response, error) {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		for _, u := range req.FeatureUpdates {
			r := kmsg.NewUpdateFeaturesResponseResult()
			r.Feature, r.ErrorCode = u.Feature, code
			resp.Results = append(resp.Results, r)
		}
		return resp, nil
	}
	if !rc.AuthorizedCluster(kmsg.ACLOperationAlter) {
		return fail(kerr.ClusterAuthorizationFailed.Code, "")
	}
	if len(req.FeatureUpdates) == 0 {
		return fail(kerr.InvalidRequest.Code, "no feature updates")
	}
	updates := make([]features.Update, 0, len(req.FeatureUpdates))
	for _, u := range req.FeatureUpdates {
		t := features.UpgradeType(u.UpgradeType)
		if req.Version == 0 {
			t = features.Upgrade
			if u.AllowDowngrade {
				t = features.SafeDowngrade
			}
		}
		updates = append(updates, features.Update{Feature: u.Feature, MaxLevel: u.MaxVersionLevel, UpgradeType: t})
	}
	results, err := h.store.UpdateFeatures(ctx, updates, req.ValidateOnly)
	if err != nil {
		return fail(errcode.Of(err), deref(errcode.Message(err)))
	}
	for i, res := range results {
		r := kmsg.NewUpdateFeaturesResponseResult()
		r.Feature = req.FeatureUpdates[i].Feature
		if res.Err != nil {
			r.ErrorCode = errcode.Of(res.Err)
			r.ErrorMessage = featureMessage(res.Err)
			if resp.ErrorCode == 0 && req.Version >= 2 {
				resp.ErrorCode, resp.ErrorMessage = r.ErrorCode, r.ErrorMessage
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

// featureMessage is the text of a failed update: Kafka's message for an
// invalid level, the redacted error otherwise.
func featureMessage(err error) *string {
	if errors.Is(err, features.ErrInvalidUpdateVersion) {
		msg := err.Error()
		return &msg
	}
	return errcode.Message(err)
}
