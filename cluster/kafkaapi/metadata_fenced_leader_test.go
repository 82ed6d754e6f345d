package kafkaapi

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/metadata"
)

// A partition whose leader in the image is fenced or unregistered is
// answered without a leader: the response's broker list leaves such a
// broker out, and a client cannot send to a broker it was not told of.
func TestMetadataNeverNamesAFencedLeader(t *testing.T) {
	img := &metadata.Image{Brokers: map[int32]*metadata.Broker{
		1: {ID: 1, Fenced: true},
		2: {ID: 2},
	}}
	lv := leaderLiveness{n: &Handlers{liveness: refusingBrokers{}}, img: img, now: time.Now()}
	for _, tc := range []struct {
		name       string
		leader     int32
		wantLeader int32
		wantErr    int16
	}{
		{"live leader", 2, 2, 0},
		{"fenced leader", 1, -1, kerr.LeaderNotAvailable.Code},
		{"unregistered leader", 7, -1, kerr.LeaderNotAvailable.Code},
		{"no leader", metadata.NoLeader, -1, kerr.LeaderNotAvailable.Code},
	} {
		mp := lv.metadataPartition(&metadata.Partition{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: tc.leader})
		if mp.Leader != tc.wantLeader || mp.ErrorCode != tc.wantErr {
			t.Errorf("%s: leader %d error %d, want %d %d", tc.name, mp.Leader, mp.ErrorCode, tc.wantLeader, tc.wantErr)
		}
	}
}
