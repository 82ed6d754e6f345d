package metadata

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/quick"

	"github.com/kbroker/kbroker/metadata/decisions"
)

// withoutIndexes is a copy of img without its derived indexes, for
// comparing images: whether SortedTopicNames was called on an image yet
// must not make it differ from another.
func withoutIndexes(img *Image) *Image {
	if img == nil {
		return nil
	}
	c := *img
	c.replicas, c.names = nil, nil
	return &c
}

// checkIndexes recomputes the indexes of img from its topics and compares.
func checkIndexes(img *Image) error {
	if img.replicas == nil || img.names == nil {
		return fmt.Errorf("image at offset %d has no indexes", img.Offset)
	}
	var total int64
	per := map[int32]int64{}
	for _, t := range img.Topics {
		total += int64(len(t.Partitions))
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				per[r]++
			}
		}
	}
	if total != img.replicas.total || !maps.Equal(per, img.replicas.perBroker) {
		return fmt.Errorf("image at offset %d counts %d partitions, replicas %v; it has %d, %v",
			img.Offset, img.replicas.total, img.replicas.perBroker, total, per)
	}
	if names := slices.Sorted(maps.Keys(img.Topics)); !slices.Equal(names, img.SortedTopicNames()) {
		return fmt.Errorf("image at offset %d lists topics %v, has %v", img.Offset, img.SortedTopicNames(), names)
	}
	return nil
}

// sameImage reports whether a and b are equal images with correct
// indexes.
func sameImage(a, b *Image) bool {
	if a != nil && checkIndexes(a) != nil || b != nil && checkIndexes(b) != nil {
		return false
	}
	return reflect.DeepEqual(withoutIndexes(a), withoutIndexes(b))
}

// TestImageIndexesFollowTheLog: after every record of generated logs
// (creates, deletes, partition changes, reassignments, fences, restores
// from snapshots), the partition counts and the sorted names equal a
// recount from the topics.
func TestImageIndexesFollowTheLog(t *testing.T) {
	for seed := range uint64(20) {
		img := emptyImage()
		for i, data := range genLog(t, seed, 300) {
			img, _ = applyEntry(img, uint64(i+1), data)
			if err := checkIndexes(img); err != nil {
				t.Fatalf("seed %d, record %d (%s): %v", seed, i+1, describeRecord(data), err)
			}
		}
	}
}

func describeRecord(data []byte) string {
	typ, _, err := decodeRecord(data)
	if err != nil {
		return err.Error()
	}
	return typ.String()
}

// TestSameMetricName: the allocation-free comparison of checkTopicCollision
// agrees with comparing the names with '.' replaced by '_'.
func TestSameMetricName(t *testing.T) {
	prop := func(a, b []byte) bool {
		// Map bytes onto a small alphabet so that equal names are common.
		abc := "._ab"
		for i := range a {
			a[i] = abc[a[i]%4]
		}
		for i := range b {
			b[i] = abc[b[i]%4]
		}
		want := strings.ReplaceAll(string(a), ".", "_") == strings.ReplaceAll(string(b), ".", "_")
		return decisions.SameMetricName(string(a), string(b)) == want
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 5000}); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreOldSnapshotBuildsIndexes: a snapshot as written before the
// image had indexes (the format is unchanged: they are not in it) restores
// with its partition counts and topic names.
func TestRestoreOldSnapshotBuildsIndexes(t *testing.T) {
	const old = `{"version":1,"offset":9,"clusterId":"c1","nextProducerId":1000,` +
		`"brokers":[{"ID":1,"IncarnationID":"a","Epoch":1,"Endpoints":null,"Rack":"","Fenced":false},` +
		`{"ID":2,"IncarnationID":"b","Epoch":2,"Endpoints":null,"Rack":"","Fenced":false}],` +
		`"topics":[{"Name":"b.x","ID":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,2],"Partitions":[` +
		`{"ID":0,"Replicas":[1,2],"ISR":[1,2],"Leader":1,"LeaderEpoch":0,"PartitionEpoch":0}],"Configs":{}},` +
		`{"Name":"a","ID":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1],"Partitions":[` +
		`{"ID":0,"Replicas":[2],"ISR":[2],"Leader":2,"LeaderEpoch":3,"PartitionEpoch":4},` +
		`{"ID":1,"Replicas":[1,2],"ISR":[1],"Leader":1,"LeaderEpoch":0,"PartitionEpoch":1}],"Configs":{}}]}`
	img, err := readSnapshot(strings.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkIndexes(img); err != nil {
		t.Fatal(err)
	}
	if c := countPartitions(img); c.total != 3 || c.perBroker[1] != 2 || c.perBroker[2] != 3 {
		t.Fatalf("counts after restore: %d, %v", c.total, c.perBroker)
	}
	if got := img.SortedTopicNames(); !slices.Equal(got, []string{"a", "b.x"}) {
		t.Fatalf("names after restore: %v", got)
	}
	// A topic whose metric name collides is still refused after restore.
	if err := checkTopicCollision(img, "b_x"); !errors.Is(err, ErrInvalidTopic) {
		t.Fatalf("b_x next to b.x: %v", err)
	}
}
