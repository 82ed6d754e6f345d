package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kbroker/kbroker/cluster/quotas"
	"github.com/kbroker/kbroker/internal/testutil"
)

// mutationClient is a client with its own connection and client id, for
// raw admin requests (franz-go's admin helpers may retry
// THROTTLING_QUOTA_EXCEEDED). pin caps API versions as key, version
// pairs: franz-go sends the highest version both sides know, whatever
// the request's Version says.
func mutationClient(t *testing.T, addr, clientID string, pin ...kmsg.Key) *kgo.Client {
	t.Helper()
	v := kversion.Stable()
	for i := 0; i+1 < len(pin); i += 2 {
		v.SetMaxKeyVersion(int16(pin[i]), int16(pin[i+1]))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID), kgo.MaxVersions(v))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopicsReq(version int16, topics map[string]int32, order ...string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = version
	req.TimeoutMillis = 30_000
	for _, name := range order {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, topics[name], 1
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// createCodes renders a CreateTopics response as "topic=code" strings in
// response order.
func createCodes(resp *kmsg.CreateTopicsResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		out = append(out, fmt.Sprintf("%s=%d", t.Topic, t.ErrorCode))
	}
	return out
}

// A client id under controller_mutation_rate creating topics with many
// partitions in quick succession: the bucket (burst 2 at 1 partition/s)
// takes the first topics whole, overdrawn by the second, then strict
// versions refuse with THROTTLING_QUOTA_EXCEEDED and a throttle time and
// create nothing, older versions are accepted and throttled, and another
// client id is not held back. CreatePartitions and DeleteTopics spend
// the same bucket.
func TestControllerMutationQuota(t *testing.T) {
	node := startNode(t, "", "controller.quota.window.num=2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := mutationClient(t, node.addr, "admin")
	res, err := kadm.NewClient(admin).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: quotaEntity("client-id", "limited"),
		Ops:    []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Value: 1}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %v", err, res)
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return len(node.image().Quotas) == 1 }, "quota not in the image")

	// The overdraft (30 partitions at 1/s) outlasts the test by far, so
	// the refusals below do not depend on how fast the machine is.
	limited := mutationClient(t, node.addr, "limited", kmsg.CreateTopics, 7)
	steps := []struct {
		topics   map[string]int32
		order    []string
		want     []string
		throttle bool
	}{
		{map[string]int32{"a": 2}, []string{"a"}, []string{"a=0"}, false},
		// A topic that fails validation (a exists) spends nothing: b,
		// behind it, still finds the bucket not below zero.
		{map[string]int32{"a": 50, "b": 30}, []string{"a", "b"}, []string{"a=36", "b=0"}, false},
		{map[string]int32{"c": 1, "d": 1}, []string{"c", "d"}, []string{"c=89", "d=89"}, true},
	}
	var throttle int32
	for i, s := range steps {
		resp, err := createTopicsReq(7, s.topics, s.order...).RequestWith(ctx, limited)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := createCodes(resp); fmt.Sprint(got) != fmt.Sprint(s.want) {
			t.Fatalf("step %d: %v, want %v", i, got, s.want)
		}
		if (resp.ThrottleMillis > 0) != s.throttle {
			t.Fatalf("step %d: throttle_time_ms %d, want throttled %v", i, resp.ThrottleMillis, s.throttle)
		}
		for _, rt := range resp.Topics {
			if rt.ErrorCode == kerr.ThrottlingQuotaExceeded.Code && (rt.ErrorMessage == nil || *rt.ErrorMessage == "") {
				t.Fatalf("step %d: %s refused without a message", i, rt.Topic)
			}
		}
		throttle = resp.ThrottleMillis
	}
	t.Logf("refused at throttle_time_ms=%d (bucket at -30 less the refill since, at 1/s)", throttle)
	if throttle < 20_000 || throttle > 30_000 {
		t.Errorf("throttle_time_ms %d, want the overdraft of about 30 s", throttle)
	}

	// Another client id is not limited, and its connection not muted.
	free := mutationClient(t, node.addr, "free")
	resp, err := createTopicsReq(7, map[string]int32{"e": 40}, "e").RequestWith(ctx, free)
	if err != nil || resp.Topics[0].ErrorCode != 0 || resp.ThrottleMillis != 0 {
		t.Fatalf("unlimited client: %v %v throttle %v", err, createCodes(resp), resp.ThrottleMillis)
	}

	// The exhausted bucket also refuses CreatePartitions v3 and
	// DeleteTopics v5 (each on a new connection: the first one is muted).
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Version, cp.TimeoutMillis = 3, 30_000
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "a", 3
	cp.Topics = append(cp.Topics, cpt)
	cpResp, err := cp.RequestWith(ctx, mutationClient(t, node.addr, "limited", kmsg.CreatePartitions, 3))
	if err != nil || cpResp.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || cpResp.ThrottleMillis <= 0 {
		t.Fatalf("CreatePartitions v3: %v %+v", err, cpResp)
	}
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.Version, dt.TimeoutMillis = 5, 30_000
	dt.TopicNames = []string{"a"}
	dtResp, err := dt.RequestWith(ctx, mutationClient(t, node.addr, "limited", kmsg.DeleteTopics, 5))
	if err != nil || dtResp.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || dtResp.ThrottleMillis <= 0 || dtResp.Topics[0].ErrorMessage == nil {
		t.Fatalf("DeleteTopics v5: %v %+v", err, dtResp)
	}
	// validateOnly spends nothing and is not refused.
	vo := createTopicsReq(7, map[string]int32{"v": 5}, "v")
	vo.ValidateOnly = true
	if voResp, err := vo.RequestWith(ctx, mutationClient(t, node.addr, "limited")); err != nil || voResp.Topics[0].ErrorCode != 0 || voResp.ThrottleMillis != 0 {
		t.Fatalf("validateOnly: %v %+v", err, voResp)
	}

	// A version before strict enforcement is served and throttled.
	old, err := createTopicsReq(5, map[string]int32{"f": 1}, "f").RequestWith(ctx, mutationClient(t, node.addr, "limited", kmsg.CreateTopics, 5))
	if err != nil || old.Topics[0].ErrorCode != 0 || old.ThrottleMillis <= 0 {
		t.Fatalf("CreateTopics v5: %v %v throttle %v", err, createCodes(old), old.ThrottleMillis)
	}

	// The refused topics and partitions were not created; the others were.
	md, err := kadm.NewClient(free).Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"a": 2, "b": 30, "e": 40, "f": 1, "c": 0, "d": 0, "v": 0} {
		if got := len(md.Topics[name].Partitions); got != want {
			t.Errorf("topic %s has %d partitions, want %d", name, got, want)
		}
	}

	// The metrics show the sensor: its bound, an exhausted bucket and
	// the throttled responses (c+d, CreatePartitions, DeleteTopics, v5).
	reg := prometheus.NewRegistry()
	reg.MustRegister(quotas.NewCollector(node.server.Quotas))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var tokens, throttled float64
	var found bool
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["quota"] != "controller_mutation" || labels["client_id"] != "limited" {
				continue
			}
			switch mf.GetName() {
			case "kbroker_client_quota_tokens":
				tokens, found = m.GetGauge().GetValue(), true
			case "kbroker_client_quota_throttled_total":
				throttled = m.GetCounter().GetValue()
			}
		}
	}
	if !found || tokens >= 0 || throttled != 4 {
		t.Fatalf("controller_mutation metrics: tokens %v (found %v), throttled %v; want negative tokens and 4 throttled", tokens, found, throttled)
	}
}
