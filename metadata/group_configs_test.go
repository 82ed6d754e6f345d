package metadata

import (
	"bytes"
	"io"
	"reflect"
	"testing"
)

// TestFSMGroupConfigs: a group's configs are set and removed, an emptied
// group disappears, a previous image is unchanged, snapshots keep them,
// and a record without a group id is refused.
func TestFSMGroupConfigs(t *testing.T) {
	img := emptyImage()
	var index uint64
	apply := func(payload *groupConfigChangeRecord) error {
		t.Helper()
		index++
		var res any
		img, res = applyEntry(img, index, mustEncode(t, recGroupConfigChange, payload))
		err, _ := res.(error)
		return err
	}
	if err := apply(&groupConfigChangeRecord{Group: "g", Set: map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"}}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, img); err != nil {
		t.Fatal(err)
	}
	f := newTestFSM()
	if err := f.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.image().GroupConfigs, img.GroupConfigs) {
		t.Fatalf("restored %v, want %v", f.image().GroupConfigs, img.GroupConfigs)
	}
	prev := img
	if err := apply(&groupConfigChangeRecord{Group: "g", Remove: []string{"share.auto.offset.reset", "share.record.lock.duration.ms"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := img.GroupConfigs["g"]; ok {
		t.Fatalf("emptied group kept: %v", img.GroupConfigs)
	}
	if prev.GroupConfigs["g"]["share.auto.offset.reset"] != "earliest" {
		t.Fatal("the change modified the previous image")
	}
	if err := apply(&groupConfigChangeRecord{Set: map[string]string{"share.auto.offset.reset": "latest"}}); err == nil {
		t.Fatal("a group config change without a group id was applied")
	}
}
