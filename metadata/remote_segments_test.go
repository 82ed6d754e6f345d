package metadata

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// TestRemoteSegmentStates walks segments through Kafka's
// RemoteLogSegmentState: only the partition's leader at its current
// epoch moves them, only forward, and a repeat is harmless.
func TestRemoteSegmentStates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := openReady(t, testConfig(t.TempDir()))
	batchTopic(ctx, t, s)
	img := s.Image()
	topic := img.Topics["t"]
	p0 := topic.Partitions[0]
	rp := RemotePartition{TopicID: topic.ID, Partition: 0}
	a := RemoteSegment{ID: [16]byte{1}, BaseOffset: 0, EndOffset: 99, Size: 1000, MaxTimestamp: 5, Broker: p0.Leader, LeaderEpoch: p0.LeaderEpoch}
	b := a
	b.ID, b.BaseOffset, b.EndOffset = [16]byte{2}, 100, 199
	with := func(seg RemoteSegment, st RemoteSegmentState) RemoteSegment { seg.State = st; return seg }

	steps := []struct {
		name    string
		seg     RemoteSegment
		wantErr error
		want    []RemoteSegmentState // states of the partition's segments after, by base offset
	}{
		{"start a", with(a, RemoteCopyStarted), nil, []RemoteSegmentState{RemoteCopyStarted}},
		{"finish unknown b", with(b, RemoteCopyFinished), ErrInvalidRemoteSegmentState, []RemoteSegmentState{RemoteCopyStarted}},
		{"start b", with(b, RemoteCopyStarted), nil, []RemoteSegmentState{RemoteCopyStarted, RemoteCopyStarted}},
		{"finish a", with(a, RemoteCopyFinished), nil, []RemoteSegmentState{RemoteCopyFinished, RemoteCopyStarted}},
		{"finish a again", with(a, RemoteCopyFinished), nil, []RemoteSegmentState{RemoteCopyFinished, RemoteCopyStarted}},
		{"a back to started", with(a, RemoteCopyStarted), ErrInvalidRemoteSegmentState, []RemoteSegmentState{RemoteCopyFinished, RemoteCopyStarted}},
		{"a deleted before delete started", with(a, RemoteDeleteFinished), ErrInvalidRemoteSegmentState, []RemoteSegmentState{RemoteCopyFinished, RemoteCopyStarted}},
		{"zombie leader epoch", func() RemoteSegment { x := with(b, RemoteCopyFinished); x.LeaderEpoch--; return x }(), ErrFencedLeaderEpoch, []RemoteSegmentState{RemoteCopyFinished, RemoteCopyStarted}},
		{"not the leader", func() RemoteSegment { x := with(b, RemoteCopyFinished); x.Broker = 2; return x }(), ErrFencedLeaderEpoch, []RemoteSegmentState{RemoteCopyFinished, RemoteCopyStarted}},
		{"abandoned b delete started", with(b, RemoteDeleteStarted), nil, []RemoteSegmentState{RemoteCopyFinished, RemoteDeleteStarted}},
		{"b deleted", with(b, RemoteDeleteFinished), nil, []RemoteSegmentState{RemoteCopyFinished}},
	}
	for _, st := range steps {
		err := s.PutRemoteSegment(ctx, rp, st.seg)
		if st.wantErr == nil && err != nil || st.wantErr != nil && !errors.Is(err, st.wantErr) {
			t.Fatalf("%s: got %v, want %v", st.name, err, st.wantErr)
		}
		segs := s.Image().RemoteSegments(topic.ID, 0)
		if len(segs) != len(st.want) {
			t.Fatalf("%s: %d segments, want %d", st.name, len(segs), len(st.want))
		}
		for i, seg := range segs {
			if seg.State != st.want[i] {
				t.Fatalf("%s: segment %d is %v, want %v", st.name, i, seg.State, st.want[i])
			}
		}
	}

	// The snapshot carries them.
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, s.Image()); err != nil {
		t.Fatal(err)
	}
	restored, err := readSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got := restored.RemoteSegments(topic.ID, 0)
	if len(got) != 1 || *got[0] != *s.Image().RemoteSegments(topic.ID, 0)[0] {
		t.Fatalf("restored %v", got)
	}

	// Deleting the topic forgets them.
	if errs := s.DeleteTopics(ctx, []string{"t"}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if segs := s.Image().RemoteSegments(topic.ID, 0); len(segs) != 0 {
		t.Fatalf("deleted topic keeps %d remote segments", len(segs))
	}
}
