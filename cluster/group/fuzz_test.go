package group

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzDecode decodes arbitrary __consumer_offsets records as a
// coordinator loading the topic does, and brings a decoded group back to
// life (Restore) and drives it: whatever the bytes, nothing panics, and a
// restored group's own metadata record decodes again to the same members.
//
// The seed corpus under testdata/fuzz/FuzzDecode is offset and group
// records as the coordinator writes them; regenerate it with
//
//	KB_WRITE_FUZZ_CORPUS=1 go test -run TestWriteGroupFuzzCorpus ./cluster/group
func FuzzDecode(f *testing.F) {
	for _, s := range groupSeeds() {
		f.Add(s.key, s.value, s.tombstone)
	}
	now := time.UnixMilli(1_800_000_000_000)
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		} else if value == nil {
			value = []byte{}
		}
		e, err := Decode(key, value)
		if err != nil || e.IsOffset || e.Tombstone {
			return
		}
		g := Restore(e.Group, &e.Metadata, map[TopicPartition]Offset{{"t", 0}: {Offset: 1}}, 0, now)
		again, err := Decode(GroupKey(e.Group), g.MetadataValue())
		if err != nil {
			t.Fatalf("re-decoding a restored group's record: %v", err)
		}
		if len(again.Metadata.Members) != len(g.Members()) {
			t.Fatalf("%d members restored, %d in its record", len(g.Members()), len(again.Metadata.Members))
		}
		g.SubscribedTopics()
		if ms := g.Members(); len(ms) > 0 {
			_ = g.Heartbeat(ms[0].ID, ms[0].InstanceID, g.Generation(), now)
			_ = g.ValidateCommit(ms[0].ID, ms[0].InstanceID, g.Generation(), now)
			g.Leave([]LeaveMember{{MemberID: ms[len(ms)-1].ID, InstanceID: ms[len(ms)-1].InstanceID}}, now)
		}
		g.Join(JoinRequest{ClientID: "fuzz", ProtocolType: g.ProtocolType(), Protocols: []Protocol{{Name: g.Protocol()}},
			SessionTimeout: time.Second, RebalanceTimeout: time.Second}, now, func(JoinResult) {})
		g.Tick(now.Add(time.Hour))
		g.MetadataValue()
	})
}

type groupSeed struct {
	name       string
	key, value []byte
	tombstone  bool
}

func groupSeeds() []groupSeed {
	subscription := kmsg.NewConsumerMemberMetadata()
	subscription.Topics = []string{"events", "logs"}
	md := kmsg.NewGroupMetadataValue()
	md.Version = 3
	md.ProtocolType = "consumer"
	md.Generation = 4
	protocol, leader, instance := "range", "m-1", "static-1"
	md.Protocol, md.Leader = &protocol, &leader
	md.CurrentStateTimestamp = 1_700_000_000_000
	for i, inst := range []*string{nil, &instance} {
		m := kmsg.NewGroupMetadataValueMember()
		m.MemberID = fmt.Sprintf("m-%d", i+1)
		m.InstanceID = inst
		m.ClientID, m.ClientHost = "client", "/127.0.0.1"
		m.SessionTimeoutMillis, m.RebalanceTimeoutMillis = 45000, 300000
		m.Subscription = subscription.AppendTo(nil)
		m.Assignment = []byte{0, 0, 0, 0, 0, 0}
		md.Members = append(md.Members, m)
	}
	empty := kmsg.NewGroupMetadataValue()
	empty.Version = 3
	empty.ProtocolType = "consumer"
	tp := TopicPartition{"events", 3}
	return []groupSeed{
		{"offset", OffsetKey("g", tp), OffsetValue(Offset{Offset: 42, LeaderEpoch: 2, Metadata: "m", CommitTimestamp: 1}), false},
		{"offset-tombstone", OffsetKey("g", tp), nil, true},
		{"group", GroupKey("g"), md.AppendTo(nil), false},
		{"group-empty", GroupKey("g"), empty.AppendTo(nil), false},
		{"group-tombstone", GroupKey("g"), nil, true},
		{"unknown-key-version", append([]byte{0, 9}, bytes.Repeat([]byte{1}, 8)...), []byte{0, 1}, false},
	}
}

// TestWriteGroupFuzzCorpus writes the seed corpus in Go's corpus file
// format.
func TestWriteGroupFuzzCorpus(t *testing.T) {
	if os.Getenv("KB_WRITE_FUZZ_CORPUS") == "" {
		t.Skip("set KB_WRITE_FUZZ_CORPUS=1 to regenerate testdata/fuzz")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range groupSeeds() {
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\nbool(%v)\n", s.key, s.value, s.tombstone)
		if err := os.WriteFile(filepath.Join(dir, s.name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
