package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/metadata/features"
)

// finalized asks ApiVersions v4 for the finalized feature levels.
func finalized(ctx context.Context, t *testing.T, cl *kgo.Client) (map[string]int16, int64) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 4
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kbroker-test", "1"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	levels := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		levels[f.Name] = f.MaxVersionLevel
	}
	return levels, resp.FinalizedFeaturesEpoch
}

// A new cluster finalizes the build's bootstrap levels; UpdateFeatures
// changes them with Kafka's rules, and ApiVersions reports each change
// with a new epoch.
func TestUpdateFeatures(t *testing.T) {
	node := startNode(t, "")
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	levels, epoch := finalized(ctx, t, cl)
	for name, want := range features.Bootstrap() {
		if want > 0 && levels[name] != want {
			t.Errorf("%s finalized at %d, want the bootstrap level %d (all: %v)", name, levels[name], want, levels)
		}
	}

	// ApiVersions v3 lists no supported feature with a minimum of 0.
	v3 := kmsg.NewPtrApiVersionsRequest()
	v3.Version = 3
	v3.ClientSoftwareName, v3.ClientSoftwareVersion = "kbroker-test", "1"
	// (over a raw connection: kgo sends its own ApiVersions version)
	resp3 := kafkatest.Dial(t, node.addr).RoundTrip(v3).(*kmsg.ApiVersionsResponse)
	if len(resp3.SupportedFeatures) == 0 {
		t.Error("ApiVersions v3 lists no supported feature")
	}
	for _, f := range resp3.SupportedFeatures {
		if f.MinVersion == 0 {
			t.Errorf("ApiVersions v3 lists %s from level 0", f.Name)
		}
	}

	// Validate only: nothing changes.
	res, err := adm.UpdateFeatures(ctx, true, kadm.FeatureUpdate{Feature: features.GroupVersion, MaxVersionLevel: 0, UpgradeType: 2})
	if err != nil || res.Error() != nil {
		t.Fatalf("validate-only downgrade: %v %v", err, res.Error())
	}
	if got, _ := finalized(ctx, t, cl); got[features.GroupVersion] != levels[features.GroupVersion] {
		t.Fatalf("a validate-only update changed group.version to %d", got[features.GroupVersion])
	}

	// A downgrade needs a downgrade type.
	res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: features.GroupVersion, MaxVersionLevel: 0, UpgradeType: 1})
	if err != nil || !errors.Is(res.Error(), kerr.InvalidUpdateVersion) {
		t.Fatalf("downgrade as an upgrade: %v %v, want INVALID_UPDATE_VERSION", err, res.Error())
	}
	// A level this build does not support.
	res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: features.MetadataVersion, MaxVersionLevel: features.LatestMetadataVersion + 1, UpgradeType: 1})
	if err != nil || !errors.Is(res.Error(), kerr.InvalidUpdateVersion) {
		t.Fatalf("unsupported level: %v %v, want INVALID_UPDATE_VERSION", err, res.Error())
	}

	// A safe downgrade of group.version, then back up.
	res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: features.GroupVersion, MaxVersionLevel: 0, UpgradeType: 2})
	if err != nil || res.Error() != nil {
		t.Fatalf("safe downgrade: %v %v", err, res.Error())
	}
	got, epoch2 := finalized(ctx, t, cl)
	if _, listed := got[features.GroupVersion]; listed || epoch2 <= epoch {
		t.Fatalf("after the downgrade: levels %v epoch %d (was %d)", got, epoch2, epoch)
	}
	// With group.version 0 the consumer group protocol is off.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = "g", "m", 30000
	hb.SubscribedTopicNames = []string{"t"}
	hbResp, err := hb.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if hbResp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("ConsumerGroupHeartbeat at group.version 0: code %d, want UNSUPPORTED_VERSION", hbResp.ErrorCode)
	}
	res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: features.GroupVersion, MaxVersionLevel: 1, UpgradeType: 1})
	if err != nil || res.Error() != nil {
		t.Fatalf("upgrade: %v %v", err, res.Error())
	}
	if got, _ := finalized(ctx, t, cl); got[features.GroupVersion] != 1 {
		t.Fatalf("after the upgrade group.version is %d", got[features.GroupVersion])
	}
}
