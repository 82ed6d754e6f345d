package quotas

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/quota"
	"github.com/kbroker/kbroker/metadata"
	"github.com/prometheus/client_golang/prometheus"
)

func TestLookupQuotaPrecedence(t *testing.T) {
	u, c := metadata.Named("u"), metadata.Named("c")
	d := metadata.DefaultQuotaName
	// Each case adds one entity to those of the cases before it, most
	// general first, so each case's entity is the most specific one set.
	steps := []struct {
		entity metadata.QuotaEntity
		tags   Tags
	}{
		{metadata.QuotaEntity{ClientID: d}, Tags{"", "c"}},
		{metadata.QuotaEntity{ClientID: c}, Tags{"", "c"}},
		{metadata.QuotaEntity{User: d}, Tags{"u", ""}},
		{metadata.QuotaEntity{User: d, ClientID: d}, Tags{"u", "c"}},
		{metadata.QuotaEntity{User: d, ClientID: c}, Tags{"u", "c"}},
		{metadata.QuotaEntity{User: u}, Tags{"u", ""}},
		{metadata.QuotaEntity{User: u, ClientID: d}, Tags{"u", "c"}},
		{metadata.QuotaEntity{User: u, ClientID: c}, Tags{"u", "c"}},
	}
	img := &metadata.Image{Quotas: map[metadata.QuotaEntity]map[string]float64{}}
	if _, _, ok := Lookup(img, Produce, "u", "c"); ok {
		t.Fatal("a quota found in an empty image")
	}
	// A value for another key of the most specific entity does not hide
	// the others: precedence is per key.
	img.Quotas[metadata.QuotaEntity{User: u, ClientID: c}] = map[string]float64{metadata.QuotaConsumerByteRate: 1}
	for i, s := range steps {
		vals := maps.Clone(img.Quotas[s.entity])
		if vals == nil {
			vals = map[string]float64{}
		}
		vals[metadata.QuotaProducerByteRate] = float64(i + 1)
		img.Quotas[s.entity] = vals
		v, tags, ok := Lookup(img, Produce, "u", "c")
		if !ok || v != float64(i+1) || tags != s.tags {
			t.Fatalf("with %v: quota %v tags %+v ok %v, want %v %+v", s.entity, v, tags, ok, i+1, s.tags)
		}
		if _, _, ok := Lookup(img, Request, "u", "c"); ok {
			t.Fatalf("with %v: a request quota found", s.entity)
		}
	}
	// Another user and client only match the defaults.
	if v, tags, _ := Lookup(img, Produce, "v", "x"); v != 4 || tags != (Tags{"v", "x"}) {
		t.Fatalf("other user: %v %+v, want the default user and client quota", v, tags)
	}
}

// The quota metrics name at most maxQuotaMetricSeries entities per kind,
// however many client ids a default quota gives sensors to.
func TestQuotaMetricsBounded(t *testing.T) {
	img := &metadata.Image{Quotas: map[metadata.QuotaEntity]map[string]float64{
		{ClientID: metadata.DefaultQuotaName}: {metadata.QuotaProducerByteRate: 100},
	}}
	q := New(quota.DefaultConfig, quota.DefaultConfig, func() *metadata.Image { return img })
	now := time.Now()
	for i := range 3 * maxQuotaMetricSeries {
		q.Record(Produce, "ANONYMOUS", fmt.Sprintf("client-%d", i), float64(i+1), 0, now)
	}
	throttled := q.Record(Produce, "ANONYMOUS", "client-0", 100_000, 0, now)
	if throttled <= 0 {
		t.Fatal("a client far over its quota is not throttled")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(q))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) == 0 {
		t.Fatal("no quota metrics")
	}
	for _, mf := range mfs {
		if n := len(mf.GetMetric()); n > maxQuotaMetricSeries+1 {
			t.Errorf("%s: %d series, want at most %d", mf.GetName(), n, maxQuotaMetricSeries+1)
		}
	}
	var got float64
	for _, mf := range mfs {
		if mf.GetName() == "kbroker_client_quota_throttled_total" {
			for _, m := range mf.GetMetric() {
				got += m.GetCounter().GetValue()
			}
		}
	}
	if got != 1 {
		t.Errorf("throttled responses counted %v, want 1", got)
	}
}

// The strict and permissive decisions of KIP-599, against a bucket of
// burst 20 refilled at 10 per second.
func TestRecordMutations(t *testing.T) {
	img := &metadata.Image{Quotas: map[metadata.QuotaEntity]map[string]float64{
		{ClientID: metadata.Named("limited")}: {metadata.QuotaControllerMutationRate: 10},
	}}
	t0 := time.Unix(1_000_000, 0)
	type ask struct {
		at       time.Duration
		n        float64
		accepted bool
		throttle time.Duration
	}
	tests := []struct {
		name   string
		strict bool
		asks   []ask
	}{
		{"strict: within the burst", true, []ask{{0, 5, true, 0}, {0, 15, true, 0}}},
		// Any credit left takes a whole topic, however large; the next
		// is refused and spends nothing.
		{"strict: one topic may overdraw", true, []ask{{0, 19, true, 0}, {0, 30, true, 0}, {0, 1, false, 2900 * time.Millisecond}, {0, 1, false, 2900 * time.Millisecond}}},
		{"strict: refill lets it through again", true, []ask{{0, 25, true, 0}, {0, 1, false, 500 * time.Millisecond}, {600 * time.Millisecond, 1, true, 0}}},
		{"strict: exactly empty is not exceeded", true, []ask{{0, 20, true, 0}, {0, 1, true, 0}, {0, 1, false, 100 * time.Millisecond}}},
		// Permissive takes everything and throttles once below zero.
		{"permissive: never refuses", false, []ask{{0, 20, true, 0}, {0, 10, true, time.Second}, {0, 10, true, 2 * time.Second}}},
		{"permissive: refill", false, []ask{{0, 30, true, time.Second}, {time.Second, 1, true, 100 * time.Millisecond}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := New(quota.DefaultConfig, quota.Config{Samples: 2, Window: time.Second}, func() *metadata.Image { return img })
			for i, a := range tc.asks {
				ok, th, tags := q.RecordMutations("ANONYMOUS", "limited", a.n, tc.strict, t0.Add(a.at))
				if ok != a.accepted || th != a.throttle {
					t.Fatalf("ask %d (%v at %v): accepted %v throttle %v, want %v %v", i, a.n, a.at, ok, th, a.accepted, a.throttle)
				}
				if tags != (Tags{"", "limited"}) {
					t.Fatalf("ask %d: tags %+v", i, tags)
				}
			}
		})
	}
	// A client id without the quota is never held back, and gets no
	// sensor.
	q := New(quota.DefaultConfig, quota.DefaultConfig, func() *metadata.Image { return img })
	for range 3 {
		if ok, th, _ := q.RecordMutations("ANONYMOUS", "free", 1000, true, t0); !ok || th != 0 {
			t.Fatalf("unlimited client: accepted %v throttle %v", ok, th)
		}
	}
	if n := len(q.sensors[Mutation]); n != 0 {
		t.Fatalf("%d mutation sensors for a client without a quota", n)
	}
}
