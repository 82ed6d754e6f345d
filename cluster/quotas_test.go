package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/internal/kafkatest"
	"github.com/kbroker/kbroker/internal/testutil"
)

func strp(s string) *string { return &s }

func quotaEntity(kv ...string) kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	for i := 0; i < len(kv); i += 2 {
		c := kadm.ClientQuotaEntityComponent{Type: kv[i]}
		if kv[i+1] != "<default>" {
			c.Name = strp(kv[i+1])
		}
		e = append(e, c)
	}
	return e
}

// describedQuotas renders described quotas as sorted "entity: values"
// lines, for comparison.
func describedQuotas(d kadm.DescribedClientQuotas) []string {
	var out []string
	for _, q := range d {
		var ent, vals []string
		for _, c := range q.Entity {
			ent = append(ent, c.String())
		}
		for _, v := range q.Values {
			vals = append(vals, v.String())
		}
		sort.Strings(ent)
		sort.Strings(vals)
		out = append(out, strings.Join(ent, ",")+": "+strings.Join(vals, ","))
	}
	sort.Strings(out)
	return out
}

func TestClientQuotasAdminRoundTrip(t *testing.T) {
	node := startNode(t, "")
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	set := func(key string, v float64) kadm.AlterClientQuotaOp {
		return kadm.AlterClientQuotaOp{Key: key, Value: v}
	}
	entries := []kadm.AlterClientQuotaEntry{
		{Entity: quotaEntity("user", "alice"), Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1024), set("request_percentage", 12.5)}},
		{Entity: quotaEntity("user", "<default>"), Ops: []kadm.AlterClientQuotaOp{set("consumer_byte_rate", 2048)}},
		{Entity: quotaEntity("user", "alice", "client-id", "app"), Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 4096)}},
		{Entity: quotaEntity("user", "<default>", "client-id", "<default>"), Ops: []kadm.AlterClientQuotaOp{set("controller_mutation_rate", 3)}},
		{Entity: quotaEntity("client-id", "<default>"), Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 8192)}},
		{Entity: quotaEntity("ip", "10.0.0.1"), Ops: []kadm.AlterClientQuotaOp{set("connection_creation_rate", 5)}},
	}
	// validateOnly writes nothing.
	res, err := adm.ValidateAlterClientQuotas(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("validate %v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
	if d, err := adm.DescribeClientQuotas(ctx, false, nil); err != nil || len(d) != 0 {
		t.Fatalf("after validateOnly: %v, %v", describedQuotas(d), err)
	}
	if res, err = adm.AlterClientQuotas(ctx, entries); err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("alter %v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}

	// Invalid entries fail on their own; the valid one beside them applies.
	bad := []kadm.AlterClientQuotaEntry{
		{Entity: quotaEntity("user", "bob"), Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 10.5)}},
		{Entity: quotaEntity("user", "bob", "ip", "10.0.0.2"), Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 10)}},
		{Entity: quotaEntity("user", "bob"), Ops: []kadm.AlterClientQuotaOp{set("no_such_key", 10)}},
		{Entity: quotaEntity("user", "bob"), Ops: []kadm.AlterClientQuotaOp{set("consumer_byte_rate", 0)}},
		{Entity: quotaEntity("user", ""), Ops: []kadm.AlterClientQuotaOp{set("consumer_byte_rate", 1)}},
		{Entity: quotaEntity("ip", "10.0.0.3"), Ops: []kadm.AlterClientQuotaOp{set("producer_byte_rate", 1)}},
		{Entity: quotaEntity("user", "carol"), Ops: []kadm.AlterClientQuotaOp{set("consumer_byte_rate", 100)}},
	}
	if res, err = adm.AlterClientQuotas(ctx, bad); err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		want := kerr.InvalidRequest
		if i == len(res)-1 {
			want = nil
		}
		if !errors.Is(r.Err, want) && !(want == nil && r.Err == nil) {
			t.Errorf("entry %d %v: err %v (%s), want %v", i, r.Entity, r.Err, r.ErrMessage, want)
		}
	}

	tests := []struct {
		name   string
		strict bool
		filter []kadm.DescribeClientQuotaComponent
		want   []string
	}{
		{"all", false, nil, []string{
			"client-id=<default>,user=<default>: controller_mutation_rate=3.000000",
			"client-id=<default>: producer_byte_rate=8192.000000",
			"client-id=app,user=alice: producer_byte_rate=4096.000000",
			"ip=10.0.0.1: connection_creation_rate=5.000000",
			"user=<default>: consumer_byte_rate=2048.000000",
			"user=alice: producer_byte_rate=1024.000000,request_percentage=12.500000",
			"user=carol: consumer_byte_rate=100.000000",
		}},
		{"exact user alice", false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: strp("alice"), MatchType: kmsg.QuotasMatchTypeExact}}, []string{
			"client-id=app,user=alice: producer_byte_rate=4096.000000",
			"user=alice: producer_byte_rate=1024.000000,request_percentage=12.500000",
		}},
		{"exact user alice strict", true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: strp("alice"), MatchType: kmsg.QuotasMatchTypeExact}}, []string{
			"user=alice: producer_byte_rate=1024.000000,request_percentage=12.500000",
		}},
		{"default user", false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: kmsg.QuotasMatchTypeDefault}}, []string{
			"client-id=<default>,user=<default>: controller_mutation_rate=3.000000",
			"user=<default>: consumer_byte_rate=2048.000000",
		}},
		{"any client-id strict", true, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchType: kmsg.QuotasMatchTypeAny}}, []string{
			"client-id=<default>: producer_byte_rate=8192.000000",
		}},
		{"any user and any client-id", false, []kadm.DescribeClientQuotaComponent{
			{Type: "user", MatchType: kmsg.QuotasMatchTypeAny}, {Type: "client-id", MatchType: kmsg.QuotasMatchTypeAny}}, []string{
			"client-id=<default>,user=<default>: controller_mutation_rate=3.000000",
			"client-id=app,user=alice: producer_byte_rate=4096.000000",
		}},
		{"ip", false, []kadm.DescribeClientQuotaComponent{{Type: "ip", MatchType: kmsg.QuotasMatchTypeAny}}, []string{
			"ip=10.0.0.1: connection_creation_rate=5.000000",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := adm.DescribeClientQuotas(ctx, tc.strict, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if got := describedQuotas(d); !slices.Equal(got, tc.want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
	// Bad filters are refused as Kafka refuses them.
	for _, f := range [][]kadm.DescribeClientQuotaComponent{
		{{Type: "user", MatchType: kmsg.QuotasMatchTypeExact}},
		{{Type: "user", MatchName: strp("x"), MatchType: kmsg.QuotasMatchTypeDefault}},
		{{Type: "ip", MatchType: kmsg.QuotasMatchTypeAny}, {Type: "user", MatchType: kmsg.QuotasMatchTypeAny}},
		{{Type: "user", MatchType: kmsg.QuotasMatchTypeAny}, {Type: "user", MatchType: kmsg.QuotasMatchTypeDefault}},
	} {
		if _, err := adm.DescribeClientQuotas(ctx, false, f); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("filter %+v: err %v, want INVALID_REQUEST", f, err)
		}
	}

	// Removing the last value forgets the entity; removing a key that is
	// not set is no error.
	res, err = adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: quotaEntity("user", "<default>"), Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Remove: true}}},
		{Entity: quotaEntity("user", "alice"), Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Remove: true}, {Key: "consumer_byte_rate", Remove: true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("remove %v: %v", r.Entity, r.Err)
		}
	}
	d, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: kmsg.QuotasMatchTypeAny}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"user=alice: producer_byte_rate=1024.000000", "user=carol: consumer_byte_rate=100.000000"}
	if got := describedQuotas(d); !slices.Equal(got, want) {
		t.Fatalf("after removals got %v, want %v", got, want)
	}
}

func TestClientQuotasNeedClusterConfigRights(t *testing.T) {
	node := startNodeWith(t, "", func(n *Node) {
		n.server.SetAuthorizer(denyCluster{})
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: quotaEntity("user", "a"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alter: %v, want CLUSTER_AUTHORIZATION_FAILED", res[0].Err)
	}
	if _, err := adm.DescribeClientQuotas(ctx, false, nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("describe: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if q := node.image().Quotas; len(q) != 0 {
		t.Fatalf("refused alteration applied: %v", q)
	}
}

// denyCluster refuses every operation on the cluster resource.
type denyCluster struct{}

func (denyCluster) Authorize(_ *server.RequestContext, actions []server.Action) []bool {
	out := make([]bool, len(actions))
	for i, a := range actions {
		out[i] = a.ResourceType != kmsg.ACLResourceTypeCluster
	}
	return out
}

// produceFor produces 10 KB random (incompressible) records with client
// id for d and returns the bytes acknowledged each second, and the
// largest throttle the broker asked for.
func produceFor(t *testing.T, addr, topic, clientID string, d time.Duration) ([]float64, time.Duration) {
	t.Helper()
	var maxThrottle atomic.Int64
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ClientID(clientID),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(50),
		// Small requests: a throttle is decided per request, so the
		// request size is the grain of the rate.
		kgo.ProducerBatchMaxBytes(64<<10),
		kgo.WithHooks(throttleHook(func(d time.Duration) {
			for cur := maxThrottle.Load(); int64(d) > cur && !maxThrottle.CompareAndSwap(cur, int64(d)); cur = maxThrottle.Load() {
			}
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	secs := int(d / time.Second)
	perSec := make([]float64, secs)
	var mu sync.Mutex
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	value := make([]byte, 10<<10)
	rand.Read(value)
	var failed atomic.Value
	for ctx.Err() == nil {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
			if err != nil {
				if ctx.Err() == nil {
					failed.Store(err)
				}
				return
			}
			if i := int(time.Since(start) / time.Second); i < secs {
				mu.Lock()
				perSec[i] += float64(len(r.Value))
				mu.Unlock()
			}
		})
	}
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("%s: produce: %v", clientID, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(perSec), time.Duration(maxThrottle.Load())
}

type throttleHook func(time.Duration)

func (h throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) { h(d) }

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// A producer limited to 1 MB/s averages that rate and is told to back
// off; an unlimited producer beside it is not held to it.
func TestClientQuotaLimitsProducerRate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs producers for ~40 s")
	}
	const limit = 1_000_000.0
	node := startNode(t, "")
	ensureTopic(t, node.addr, "quota", 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: quotaEntity("client-id", "limited"),
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: limit}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %v", err, res)
	}

	alone, _ := produceFor(t, node.addr, "quota", "free", 5*time.Second)
	var (
		wg              sync.WaitGroup
		limited, beside []float64
		throttle        time.Duration
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		beside, _ = produceFor(t, node.addr, "quota", "free", 10*time.Second)
	}()
	limited, throttle = produceFor(t, node.addr, "quota", "limited", 33*time.Second)
	wg.Wait()

	// The first Samples-1 windows let a new client burst (Kafka spreads a
	// new sensor's bytes over them); the average is taken over the 22 s
	// (two full quota windows) after them.
	avg := mean(limited[11:33])
	t.Logf("limited producer: %.0f B/s over 22 s (limit %.0f), per second %v; largest throttle %v", avg, limit, limited, throttle)
	t.Logf("unlimited producer: %.0f B/s alone, %.0f B/s beside the limited one (ratio %.2f)", mean(alone), mean(beside), mean(beside)/mean(alone))
	if avg < 0.9*limit || avg > 1.1*limit {
		t.Errorf("limited producer averaged %.0f B/s, want within 10%% of %.0f", avg, limit)
	}
	if throttle <= 0 {
		t.Error("limited producer never saw throttle_time_ms")
	}
	if b := mean(beside); b < 3*limit {
		t.Errorf("unlimited producer made %.0f B/s beside the limited one, want well over the %.0f limit", b, limit)
	}
}

// A consumer over consumer_byte_rate is throttled to about that rate.
func TestClientQuotaLimitsConsumerRate(t *testing.T) {
	if testing.Short() {
		t.Skip("consumes for ~10 s")
	}
	const limit = 1_000_000.0
	// Three samples of 1 s: a new sensor's first bytes are spread over
	// two windows, so the allowance before throttling is ~2 MB.
	node := startNode(t, "", "quota.window.num=3")
	ensureTopic(t, node.addr, "cquota", 1)
	value := make([]byte, 10<<10)
	rand.Read(value)
	pcl, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.DefaultProduceTopic("cquota"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for range 20 {
		var rs []*kgo.Record
		for range 100 {
			rs = append(rs, &kgo.Record{Value: value})
		}
		if err := pcl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := kadm.NewClient(pcl).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: quotaEntity("user", "<default>"),
		Ops:    []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: limit}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %v", err, res)
	}
	var throttled atomic.Int64
	ccl, err := kgo.NewClient(kgo.SeedBrokers(node.addr), kgo.ConsumeTopics("cquota"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(256<<10), kgo.FetchMaxPartitionBytes(256<<10),
		kgo.WithHooks(throttleHook(func(d time.Duration) { throttled.Add(int64(d)) })))
	if err != nil {
		t.Fatal(err)
	}
	defer ccl.Close()
	const run = 10 * time.Second
	start := time.Now()
	var got float64
	for time.Since(start) < run {
		pctx, pcancel := context.WithDeadline(ctx, start.Add(run))
		fs := ccl.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) { got += float64(len(r.Value)) })
	}
	rate := got / run.Seconds()
	t.Logf("consumer read %.0f B in %v: %.0f B/s (limit %.0f); total throttle %v", got, run, rate, limit, time.Duration(throttled.Load()))
	// Up to the 2 s allowance, one fetch over it, then the limit.
	if maxBytes := limit*(run.Seconds()+2)*1.1 + 256<<10; got > maxBytes {
		t.Errorf("consumer read %.0f B in %v, more than the quota allows (%.0f)", got, run, maxBytes)
	}
	if got < 0.5*limit*run.Seconds() {
		t.Errorf("consumer read only %.0f B in %v at a %.0f B/s quota", got, run, limit)
	}
	if throttled.Load() == 0 {
		t.Error("consumer never saw throttle_time_ms")
	}
}

// A throttled client is not read from for the throttle time: a second
// request pipelined behind a throttled one is answered no earlier than
// the throttle ends. A response version from before KIP-219 (Produce
// v5) is itself held back for the throttle time, since such clients do
// not wait by themselves.
func TestThrottledConnectionIsMuted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int16
		delayed bool
	}{{"KIP-219 response sent then muted", 7, false}, {"old version response delayed", 5, true}} {
		t.Run(tc.name, func(t *testing.T) {
			// One padded window of 1 s: a first request of S bytes at
			// 10 kB/s asks for (S - 10 kB) / 10 kB seconds.
			node := startNode(t, "", "quota.window.num=2")
			ensureTopic(t, node.addr, "muted", 1)
			cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := kadm.NewClient(cl).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
				Entity: quotaEntity("client-id", "raw-test"),
				Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 10_000}},
			}})
			if err != nil || res[0].Err != nil {
				t.Fatalf("alter: %v %v", err, res)
			}
			testutil.Eventually(t, 30*time.Second, func() bool { return len(node.image().Quotas) == 1 }, "quota not in the image")

			rc := kafkatest.Dial(t, node.addr)
			req := kafkatest.ProduceRequest(tc.version, 1, "muted", map[int32][]byte{0: testBatch(t, 1000, -1, -1, -1)})
			sent := time.Now()
			c1 := rc.Send(req)
			c2 := rc.Send(req)
			r1 := req.ResponseKind().(*kmsg.ProduceResponse)
			rc.Recv(c1, r1)
			first := time.Since(sent)
			r2 := req.ResponseKind().(*kmsg.ProduceResponse)
			rc.Recv(c2, r2)
			second := time.Since(sent)
			throttle := time.Duration(r1.ThrottleMillis) * time.Millisecond
			t.Logf("throttle %v; first response after %v, second after %v", throttle, first, second)
			if throttle < 500*time.Millisecond {
				t.Fatalf("throttle_time_ms %d, want about 1.5 s", r1.ThrottleMillis)
			}
			// Timers and clocks may round down by a millisecond or so.
			const slack = 20 * time.Millisecond
			if second < throttle-slack {
				t.Errorf("second request answered %v after sending, before the %v throttle ended", second, throttle)
			}
			if tc.delayed && first < throttle-slack {
				t.Errorf("v%d response came after %v, before the %v throttle ended", tc.version, first, throttle)
			}
			if e := partitionErrors(r1); e[0] != 0 {
				t.Errorf("first produce: error %d", e[0])
			}
		})
	}
}

func testutilCount(mfs []*dto.MetricFamily, name string) float64 {
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// New connections from an ip over its connection_creation_rate are held
// for the throttle time and closed unanswered; those within it are
// served.
func TestConnectionCreationRateQuota(t *testing.T) {
	// One padded 1 s window: two connections fit a rate of 2/s.
	node := startNode(t, "", "quota.window.num=2")
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.addr))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := kadm.NewClient(cl).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: quotaEntity("ip", "<default>"),
		Ops:    []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 2}},
	}})
	cl.Close()
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %v", err, res)
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return len(node.image().Quotas) == 1 }, "quota not in the image")

	served, refused := 0, 0
	for range 6 {
		c := kafkatest.Dial(t, node.addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
		c.Send(req)
		if _, err := c.ReadFrame(10 * time.Second); err == nil {
			served++
		} else {
			refused++
		}
	}
	t.Logf("%d connections served, %d closed after a throttle", served, refused)
	if served < 1 || served > 3 || refused == 0 {
		t.Fatalf("%d served and %d refused of 6 connections at a rate of 2/s", served, refused)
	}
	if got := nodeMetric(t, node.Node, "kbroker_connections_rejected_total", "listener", "PLAINTEXT", "reason", "ip_rate"); got != float64(refused) {
		t.Fatalf("ip_rate rejections counted %v, want %d", got, refused)
	}
}

// ensureTopic creates a topic; one already there counts as created (a
// CreateTopics retried by the client after a slow first answer finds the
// topic its first attempt made).
func ensureTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}
