package admincli

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/testutil"
)

func TestGroupLagRows(t *testing.T) {
	lag := func(v int64) *int64 { return &v }
	assigned := func(topic string, ps ...int32) kadm.TopicsSet {
		s := kadm.TopicsSet{}
		s.Add(topic, ps...)
		return s
	}
	commits := func(cs ...kadm.OffsetResponse) kadm.OffsetResponses {
		out := kadm.OffsetResponses{}
		for _, c := range cs {
			out.Add(c)
		}
		return out
	}
	commit := func(topic string, p int32, at int64) kadm.OffsetResponse {
		return kadm.OffsetResponse{Offset: kadm.Offset{Topic: topic, Partition: p, At: at}}
	}
	ends := kadm.ListedOffsets{
		"t": {0: {Topic: "t", Partition: 0, Offset: 100}, 1: {Topic: "t", Partition: 1, Offset: 50},
			2: {Topic: "t", Partition: 2, Offset: 5, Err: kerr.NotLeaderForPartition}},
		"gone": {-1: {Topic: "gone", Partition: -1, Err: kerr.UnknownTopicOrPartition}},
	}
	m1 := memberView{id: "m1", host: "/10.0.0.1", clientID: "c1", assigned: assigned("t", 0, 1)}
	idle := memberView{id: "m0", host: "/10.0.0.2", clientID: "c0", assigned: kadm.TopicsSet{}}

	for _, tc := range []struct {
		name      string
		members   []memberView
		committed kadm.OffsetResponses
		want      []partitionLag
		wantIdle  []groupMemberID
	}{
		{"commit at N, end M: lag M-N", []memberView{m1}, commits(commit("t", 0, 40), commit("t", 1, 50)), []partitionLag{
			{Topic: "t", Partition: 0, CurrentOffset: 40, LogEndOffset: 100, Lag: lag(60), ConsumerID: "m1", Host: "/10.0.0.1", ClientID: "c1"},
			{Topic: "t", Partition: 1, CurrentOffset: 50, LogEndOffset: 50, Lag: lag(0), ConsumerID: "m1", Host: "/10.0.0.1", ClientID: "c1"},
		}, nil},
		{"assigned without a commit: no lag", []memberView{m1}, commits(commit("t", 0, 10)), []partitionLag{
			{Topic: "t", Partition: 0, CurrentOffset: 10, LogEndOffset: 100, Lag: lag(90), ConsumerID: "m1", Host: "/10.0.0.1", ClientID: "c1"},
			{Topic: "t", Partition: 1, CurrentOffset: -1, LogEndOffset: 50, ConsumerID: "m1", Host: "/10.0.0.1", ClientID: "c1"},
		}, nil},
		{"committed, no member (Empty group)", nil, commits(commit("t", 1, 20)), []partitionLag{
			{Topic: "t", Partition: 1, CurrentOffset: 20, LogEndOffset: 50, Lag: lag(30)},
		}, nil},
		{"commit past the end rounds to 0", nil, commits(commit("t", 1, 70)), []partitionLag{
			{Topic: "t", Partition: 1, CurrentOffset: 70, LogEndOffset: 50, Lag: lag(0)},
		}, nil},
		{"end offset error, deleted topic", nil, commits(commit("t", 2, 1), commit("gone", 0, 3)), []partitionLag{
			{Topic: "gone", Partition: 0, CurrentOffset: 3, LogEndOffset: -1, Error: kerr.UnknownTopicOrPartition.Error()},
			{Topic: "t", Partition: 2, CurrentOffset: 1, LogEndOffset: -1, Error: kerr.NotLeaderForPartition.Error()},
		}, nil},
		{"idle member listed apart", []memberView{m1, idle}, commits(), []partitionLag{
			{Topic: "t", Partition: 0, CurrentOffset: -1, LogEndOffset: 100, ConsumerID: "m1", Host: "/10.0.0.1", ClientID: "c1"},
			{Topic: "t", Partition: 1, CurrentOffset: -1, LogEndOffset: 50, ConsumerID: "m1", Host: "/10.0.0.1", ClientID: "c1"},
		}, []groupMemberID{{"m0", "/10.0.0.2", "c0"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, idle := groupLagRows(groupView{name: "g", members: tc.members}, tc.committed, ends)
			if !reflect.DeepEqual(rows, tc.want) {
				t.Errorf("rows:\n%s\nwant:\n%s", fmtRows(rows), fmtRows(tc.want))
			}
			if !reflect.DeepEqual(idle, tc.wantIdle) {
				t.Errorf("idle members %+v, want %+v", idle, tc.wantIdle)
			}
		})
	}
}

func fmtRows(rows []partitionLag) string {
	var b strings.Builder
	for _, r := range rows {
		lag := "nil"
		if r.Lag != nil {
			lag = fmt.Sprint(*r.Lag)
		}
		fmt.Fprintf(&b, "  %+v lag=%s\n", r, lag)
	}
	return b.String()
}

// groups describe against a node: a classic and a consumer (KIP-848)
// group, each with a commit at N on a partition whose high watermark is
// M (lag M−N) and an assigned partition without a commit (lag "-"); the
// group named as an argument, flags after it.
func TestAdminGroupsDescribeLag(t *testing.T) {
	addr := startInProcessBroker(t)
	mustAdmin(t, addr, "topics", "create", "--topic", "lagged", "--partitions", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const produced = 12
	for i := range produced {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "lagged", Partition: 0, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		group, typ string
		opts       []kgo.Opt
	}{
		{"classic-readers", "classic", nil},
		{"consumer-readers", "consumer", []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer())}},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			const read = 5
			cons, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID("reader-" + tc.typ),
				kgo.ConsumerGroup(tc.group), kgo.ConsumeTopics("lagged"), kgo.DisableAutoCommit(),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			for got := 0; got < read; {
				fs := cons.PollRecords(ctx, read-got)
				if err := fs.Err0(); err != nil {
					t.Fatal(err)
				}
				got += fs.NumRecords()
			}
			if err := cons.CommitUncommittedOffsets(ctx); err != nil {
				t.Fatal(err)
			}

			var described []describedGroupJSON
			testutil.Eventually(t, 10*time.Second, func() bool {
				described = nil
				mustJSON(t, mustAdmin(t, addr, "groups", "describe", tc.group, "--output", "json"), &described)
				return len(described) == 1 && described[0].State == "Stable" && len(described[0].Partitions) == 2
			}, "the group to be Stable with both partitions")
			g := described[0]
			if g.Group != tc.group || g.Type != tc.typ || g.Members != 1 || g.Error != "" {
				t.Fatalf("described %+v", g)
			}
			p0, p1 := g.Partitions[0], g.Partitions[1]
			if p0.Partition != 0 || p0.CurrentOffset != read || p0.LogEndOffset != produced || p0.Lag == nil || *p0.Lag != produced-read {
				t.Errorf("lagged-0: %s, want commit %d, end %d, lag %d", fmtRows([]partitionLag{p0}), read, produced, produced-read)
			}
			if p1.Partition != 1 || p1.CurrentOffset != -1 || p1.LogEndOffset != 0 || p1.Lag != nil {
				t.Errorf("lagged-1: %s, want no commit, end 0, no lag", fmtRows([]partitionLag{p1}))
			}
			for _, p := range g.Partitions {
				if p.ConsumerID == "" || p.ClientID != "reader-"+tc.typ || p.Host == "" {
					t.Errorf("partition %d: member %q client %q host %q", p.Partition, p.ConsumerID, p.ClientID, p.Host)
				}
			}

			table := mustAdmin(t, addr, "groups", "describe", "--group", tc.group)
			lines := strings.Split(strings.TrimSpace(table), "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[0], "GROUP  ") {
				t.Fatalf("table:\n%s", table)
			}
			if f := strings.Fields(lines[1]); f[3] != fmt.Sprint(read) || f[4] != fmt.Sprint(produced) || f[5] != fmt.Sprint(produced-read) {
				t.Errorf("row of lagged-0 %q, want CURRENT-OFFSET %d LOG-END-OFFSET %d LAG %d", lines[1], read, produced, produced-read)
			}
			if f := strings.Fields(lines[2]); f[3] != "-" || f[4] != "0" || f[5] != "-" {
				t.Errorf("row of lagged-1 %q, want - 0 -", lines[2])
			}
		})
	}

	out, _, code := runAdmin(t, addr, "groups", "describe", "no-such-group")
	if code != 1 || !strings.Contains(out, kerr.GroupIDNotFound.Message) {
		t.Errorf("unknown group: exit %d, output:\n%s", code, out)
	}
	if _, _, code := runAdmin(t, addr, "groups", "describe"); code != 2 {
		t.Errorf("no group: exit %d, want 2", code)
	}
}
