package metadata

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/kbroker/kbroker/metadata/features"
)

// oldCluster makes the clusters a test creates as a build before feature
// levels did: no levels with the cluster id.
func oldCluster(t *testing.T) {
	bootstrapFeatures = func() map[string]int16 { return nil }
	t.Cleanup(func() { bootstrapFeatures = features.Bootstrap })
}

func snapshotVersionOf(t *testing.T, img *Image) (int, bool) {
	t.Helper()
	var sf struct {
		Version  int              `json:"version"`
		Features map[string]int16 `json:"features"`
	}
	if err := json.Unmarshal(snapshotBytes(t, img), &sf); err != nil {
		t.Fatal(err)
	}
	return sf.Version, sf.Features != nil
}

// TestFeatureLevelApplyAndSnapshot: a cluster created before feature
// levels runs at the implied levels with snapshot format 1 (what those
// builds read); the first FeatureLevel record finalizes on top of them,
// moves the epoch and switches to format 2, which restores to the same
// image. The FSM refuses what the controller would have.
func TestFeatureLevelApplyAndSnapshot(t *testing.T) {
	oldBroker := registerBrokerRecord{BrokerID: 1, IncarnationID: "a"}
	newBroker := registerBrokerRecord{BrokerID: 2, IncarnationID: "b", Features: features.Supported()}
	steps := []struct {
		name     string
		typ      recordType
		payload  any
		rejected bool
		want     map[string]int16
		epoch    int64 // the index of the step that changed the levels last
		format   int
	}{
		{"cluster id without levels", recSetClusterID, &setClusterIDRecord{ClusterID: "c"}, false, features.Implied(), 0, 1},
		{"broker before feature levels", recRegisterBroker, &oldBroker, false, features.Implied(), 0, 1},
		{"another feature at metadata.version 1", recFeatureLevel, &featureLevelRecord{Feature: features.TransactionVersion, Level: 1}, true, features.Implied(), 0, 1},
		{"upgrade with an old broker registered", recFeatureLevel, &featureLevelRecord{Feature: features.MetadataVersion, Level: 2}, true, features.Implied(), 0, 1},
		{"the old broker upgraded", recRegisterBroker, &registerBrokerRecord{BrokerID: 1, IncarnationID: "a2", Features: features.Supported()}, false, features.Implied(), 0, 1},
		{"new broker", recRegisterBroker, &newBroker, false, features.Implied(), 0, 1},
		{"upgrade", recFeatureLevel, &featureLevelRecord{Feature: features.MetadataVersion, Level: 2}, false,
			map[string]int16{"metadata.version": 2, "kraft.version": 1, "group.version": 1}, 7, 2},
		{"transaction.version 1", recFeatureLevel, &featureLevelRecord{Feature: features.TransactionVersion, Level: 1}, false,
			map[string]int16{"metadata.version": 2, "kraft.version": 1, "group.version": 1, "transaction.version": 1}, 8, 2},
		{"an old broker cannot register now", recRegisterBroker, &registerBrokerRecord{BrokerID: 3, IncarnationID: "c"}, true,
			map[string]int16{"metadata.version": 2, "kraft.version": 1, "group.version": 1, "transaction.version": 1}, 8, 2},
		{"group.version 0 removes it", recFeatureLevel, &featureLevelRecord{Feature: features.GroupVersion, Level: 0}, false,
			map[string]int16{"metadata.version": 2, "kraft.version": 1, "transaction.version": 1}, 10, 2},
	}
	img := emptyImage()
	for i, st := range steps {
		var res any
		img, res = applyEntry(img, uint64(i+1), mustEncode(t, st.typ, st.payload))
		err, _ := res.(error)
		if (err != nil) != st.rejected {
			t.Fatalf("%s: result %v, rejected %v", st.name, res, st.rejected)
		}
		if got := img.Features(); !maps.Equal(got, st.want) || img.FeaturesEpoch() != st.epoch {
			t.Fatalf("%s: features %v epoch %d, want %v epoch %d", st.name, got, img.FeaturesEpoch(), st.want, st.epoch)
		}
		format, hasFeatures := snapshotVersionOf(t, img)
		if format != st.format || hasFeatures != (format == 2) {
			t.Fatalf("%s: snapshot format %d (features %v), want %d", st.name, format, hasFeatures, st.format)
		}
		restored, err := readSnapshot(bytes.NewReader(snapshotBytes(t, img)))
		if err != nil || !sameImage(restored, img) {
			t.Fatalf("%s: restore: %v\n got %+v\nwant %+v", st.name, err, restored, img)
		}
	}
	if b := img.Brokers[1]; !maps.Equal(b.Features, features.Supported()) {
		t.Fatalf("broker 1 features %v", b.Features)
	}

	// A new cluster's levels come with its id.
	img, _ = applyEntry(emptyImage(), 5, mustEncode(t, recSetClusterID, &setClusterIDRecord{ClusterID: "c", Features: features.Bootstrap()}))
	if !maps.Equal(img.Features(), features.Bootstrap()) || img.FeaturesEpoch() != 5 {
		t.Fatalf("bootstrap: %v epoch %d", img.Features(), img.FeaturesEpoch())
	}
}

// TestSnapshotFormatRefused: a snapshot in a format this build does not
// read is refused at restore, and at Open with the file named.
func TestSnapshotFormatRefused(t *testing.T) {
	if _, err := readSnapshot(strings.NewReader(`{"version":3,"offset":1}`)); !errors.Is(err, ErrUnsupportedRecord) ||
		!strings.Contains(err.Error(), "snapshot format 3, this build reads 1-2") {
		t.Fatalf("restore: %v", err)
	}

	dir := t.TempDir()
	snaps, err := raft.NewFileSnapshotStore(dir, snapshotsRetained, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, trans := raft.NewInmemTransport("")
	sink, err := snaps.Create(raft.SnapshotVersionMax, 10, 1, raft.Configuration{}, 1, trans)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write([]byte(`{"version":3,"offset":10,"clusterId":"c"}`)); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(testConfig(dir))
	want := filepath.Join(dir, "snapshots", sink.ID(), "state.bin") + " has format 3"
	if !errors.Is(err, ErrUnsupportedRecord) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open: %v, want %q", err, want)
	}
}

// TestRefuseUnsupportedLevel: a node whose build does not support a level
// the cluster finalized fails WaitReady, naming the feature, the level and
// its range; it starts again once the level is one it supports.
func TestRefuseUnsupportedLevel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := testConfig(t.TempDir())
	s := openReady(t, cfg)
	// A newer build's controller finalized a metadata.version above ours.
	above := features.LatestMetadataVersion + 1
	if _, err := s.propose(ctx, recFeatureLevel, &featureLevelRecord{Feature: features.MetadataVersion, Level: above}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("the cluster finalized metadata.version at level %d, and this build supports levels 1-%d", above, features.LatestMetadataVersion)
	if err := CheckSupported(s.Image()); !errors.Is(err, ErrUnsupportedFeature) || !strings.Contains(err.Error(), want) {
		t.Fatalf("CheckSupported: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.WaitReady(ctx); !errors.Is(err, ErrUnsupportedFeature) || !strings.Contains(err.Error(), want) {
		t.Fatalf("WaitReady: %v", err)
	}
	if _, err := s.propose(ctx, recFeatureLevel, &featureLevelRecord{Feature: features.MetadataVersion, Level: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestUpdateFeaturesCluster: three voters of a cluster created before
// feature levels, brokers registering on them. An old broker blocks the
// upgrade with Kafka's error; once it registers its ranges, metadata.version
// goes to 2 and the other features up and down, forwarded from a
// follower, on every node, through a snapshot and a restart.
func TestUpdateFeaturesCluster(t *testing.T) {
	oldCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := newTestCluster(t, 3, nil)
	via := c.follower()
	if img := c.converged(); !maps.Equal(img.Features(), features.Implied()) || img.FeaturesEpoch() != 0 {
		t.Fatalf("old cluster: %v epoch %d", img.Features(), img.FeaturesEpoch())
	}
	c.registerBrokers(ctx, via, 1, 2)
	old := BrokerRegistration{ID: 3, IncarnationID: "old"} // no ranges: a build before feature levels
	if _, err := call(ctx, via, opRegisterBroker, old); err != nil {
		t.Fatal(err)
	}

	update := func(validateOnly bool, us ...features.Update) []FeatureResult {
		t.Helper()
		res, err := via.UpdateFeatures(ctx, us, validateOnly)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	expect := func(res []FeatureResult, want ...string) {
		t.Helper()
		for i, r := range res {
			switch {
			case want[i] == "" && r.Err != nil:
				t.Fatalf("%s: %v", r.Feature, r.Err)
			case want[i] != "" && (!errors.Is(r.Err, ErrInvalidUpdateVersion) || !strings.Contains(r.Err.Error(), want[i])):
				t.Fatalf("%s: %v, want %q", r.Feature, r.Err, want[i])
			}
		}
	}
	levels := func(want map[string]int16) *Image {
		t.Helper()
		img := c.converged()
		if got := img.Features(); !maps.Equal(got, want) {
			t.Fatalf("features %v, want %v", got, want)
		}
		for id, s := range c.stores {
			if err := CheckSupported(s.Image()); err != nil {
				t.Fatalf("node %d: %v", id, err)
			}
		}
		return img
	}

	mv2 := features.Update{Feature: features.MetadataVersion, MaxLevel: 2, UpgradeType: features.Upgrade}
	expect(update(false, mv2), "Invalid update version 2 for feature metadata.version. broker 3 only supports versions 1")
	levels(features.Implied())

	// Broker 3 ran this build all along, but registered through a
	// controller before feature levels, which dropped its ranges: its
	// next heartbeat registers them again, in the same incarnation.
	old.Features = features.Supported()
	via.registration.Store(&old)
	epoch := via.Image().Brokers[3].Epoch
	if _, err := via.BrokerHeartbeat(ctx, 3, epoch); err != nil {
		t.Fatal(err)
	}
	if b := c.converged().Brokers[3]; !maps.Equal(b.Features, features.Supported()) || b.Epoch != epoch {
		t.Fatalf("broker 3 after its heartbeat: features %v epoch %d (was %d)", b.Features, b.Epoch, epoch)
	}
	expect(update(true, mv2), "")
	levels(features.Implied())
	expect(update(false, mv2), "")
	img := levels(map[string]int16{"metadata.version": 2, "kraft.version": 1, "group.version": 1})
	upgraded := img.FeaturesEpoch()
	if upgraded <= 0 {
		t.Fatalf("epoch %d after the upgrade", upgraded)
	}

	// A build before feature levels can no longer register.
	if _, err := call(ctx, via, opRegisterBroker, BrokerRegistration{ID: 4, IncarnationID: "old"}); !errors.Is(err, ErrUnsupportedFeature) ||
		!strings.Contains(err.Error(), "metadata.version at level 2") {
		t.Fatalf("old broker registered at metadata.version 2: %v", err)
	}

	txn := func(level int16, typ features.UpgradeType) features.Update {
		return features.Update{Feature: features.TransactionVersion, MaxLevel: level, UpgradeType: typ}
	}
	group0 := features.Update{Feature: features.GroupVersion, MaxLevel: 0, UpgradeType: features.SafeDowngrade}
	expect(update(false, txn(1, features.Upgrade), group0), "", "")
	img = levels(map[string]int16{"metadata.version": 2, "kraft.version": 1, "transaction.version": 1})
	if img.FeaturesEpoch() <= upgraded {
		t.Fatalf("epoch %d, was %d", img.FeaturesEpoch(), upgraded)
	}
	expect(update(false,
		txn(0, features.Upgrade),
		features.Update{Feature: features.MetadataVersion, MaxLevel: 1, UpgradeType: features.UnsafeDowngrade},
		features.Update{Feature: features.GroupVersion, MaxLevel: 2, UpgradeType: features.Upgrade},
	),
		"Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.",
		"Invalid metadata.version 1. Unsafe metadata downgrade is not supported in this version.",
		"Local controller")
	expect(update(false, txn(0, features.UnsafeDowngrade), features.Update{Feature: features.GroupVersion, MaxLevel: 1, UpgradeType: features.Upgrade}), "", "")
	want := map[string]int16{"metadata.version": 2, "kraft.version": 1, "group.version": 1}
	levels(want)

	// The levels survive a snapshot and a restart.
	f := c.follower()
	if err := f.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	id := f.cfg.NodeID
	c.close(id)
	c.open(id, f.cfg.BindAddr)
	if got := c.stores[id].Image().Features(); !maps.Equal(got, want) {
		t.Fatalf("restored from the snapshot: %v", got)
	}
	c.ready()
	levels(want)
}

// TestUpdateFeaturesSilentVoter: a voter that does not answer may not
// support the level: the update is refused, naming it.
func TestUpdateFeaturesSilentVoter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newTestCluster(t, 3, nil)
	l := c.leader()
	var down int32
	for id := range c.stores {
		if c.stores[id] != l && down == 0 {
			down = id
		}
	}
	c.close(down)
	var res []FeatureResult
	testutil.Eventually(t, 10*time.Second, func() error {
		var err error
		res, err = c.leader().UpdateFeatures(ctx, []features.Update{{Feature: features.TransactionVersion, MaxLevel: 1, UpgradeType: features.Upgrade}}, false)
		return err
	}, "UpdateFeatures answered")
	want := fmt.Sprintf("controller %d did not answer, and may not support this feature.", down)
	if !errors.Is(res[0].Err, ErrInvalidUpdateVersion) || !strings.Contains(res[0].Err.Error(), want) {
		t.Fatalf("%v, want %q", res[0].Err, want)
	}
}
