package metadata

import (
	"bytes"
	"errors"
	"maps"
	"testing"
)

func TestQuotaChecks(t *testing.T) {
	user, client, ip := QuotaEntity{User: Named("u")}, QuotaEntity{ClientID: DefaultQuotaName}, QuotaEntity{IP: Named("10.1.2.3")}
	tests := []struct {
		name   string
		entity QuotaEntity
		key    string
		value  float64
		ok     bool
	}{
		{"user byte rate", user, QuotaProducerByteRate, 1024, true},
		{"default client request percentage", client, QuotaRequestPercentage, 12.5, true},
		{"user and client mutation rate", QuotaEntity{User: DefaultQuotaName, ClientID: Named("c")}, QuotaControllerMutationRate, 0.5, true},
		{"ip connection rate", ip, QuotaConnectionCreationRate, 10, true},
		{"default ip", QuotaEntity{IP: DefaultQuotaName}, QuotaConnectionCreationRate, 10, true},
		{"fractional byte rate", user, QuotaConsumerByteRate, 10.5, false},
		{"zero", user, QuotaConsumerByteRate, 0, false},
		{"negative", user, QuotaRequestPercentage, -1, false},
		{"unknown key", user, "bytes_per_fortnight", 1, false},
		{"ip key on a user", user, QuotaConnectionCreationRate, 1, false},
		{"user key on an ip", ip, QuotaProducerByteRate, 1, false},
		{"ip too large", ip, QuotaConnectionCreationRate, 1 << 40, false},
		{"empty entity", QuotaEntity{}, QuotaProducerByteRate, 1, false},
		{"ip with user", QuotaEntity{User: Named("u"), IP: Named("10.1.2.3")}, QuotaConnectionCreationRate, 1, false},
		{"ip not an address", QuotaEntity{IP: Named("example.invalid")}, QuotaConnectionCreationRate, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := QuotaAlteration{Entity: tc.entity, Set: map[string]float64{tc.key: tc.value}}
			err := a.Check()
			if (err == nil) != tc.ok {
				t.Fatalf("Check = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidQuota) {
				t.Fatalf("Check = %v, not ErrInvalidQuota", err)
			}
		})
	}
}

func TestQuotaFilterMatches(t *testing.T) {
	alice := QuotaEntity{User: Named("alice")}
	aliceApp := QuotaEntity{User: Named("alice"), ClientID: Named("app")}
	defUser := QuotaEntity{User: DefaultQuotaName}
	tests := []struct {
		name   string
		filter QuotaFilter
		e      QuotaEntity
		want   bool
	}{
		{"exact", QuotaFilter{Exact: map[string]QuotaName{QuotaEntityUser: Named("alice")}}, aliceApp, true},
		{"exact strict", QuotaFilter{Exact: map[string]QuotaName{QuotaEntityUser: Named("alice")}, Strict: true}, aliceApp, false},
		{"exact strict alone", QuotaFilter{Exact: map[string]QuotaName{QuotaEntityUser: Named("alice")}, Strict: true}, alice, true},
		{"exact is not default", QuotaFilter{Exact: map[string]QuotaName{QuotaEntityUser: Named("alice")}}, defUser, false},
		{"default", QuotaFilter{Exact: map[string]QuotaName{QuotaEntityUser: DefaultQuotaName}}, defUser, true},
		{"default is not named", QuotaFilter{Exact: map[string]QuotaName{QuotaEntityUser: DefaultQuotaName}}, alice, false},
		{"any includes default", QuotaFilter{Specified: []string{QuotaEntityUser}}, defUser, true},
		{"any needs the type", QuotaFilter{Specified: []string{QuotaEntityClientID}}, alice, false},
		{"empty filter matches all", QuotaFilter{}, aliceApp, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.filter.Matches(tc.e); got != tc.want {
				t.Fatalf("Matches(%v) = %v, want %v", tc.e, got, tc.want)
			}
		})
	}
}

// Applying ClientQuota records sets and removes values; the image
// survives a snapshot.
func TestApplyClientQuotaAndSnapshot(t *testing.T) {
	img := emptyImage()
	e := QuotaEntity{User: Named("u"), ClientID: DefaultQuotaName}
	apply := func(r *clientQuotaRecord) {
		t.Helper()
		data, err := encodeRecord(recClientQuota, r)
		if err != nil {
			t.Fatal(err)
		}
		var res any
		img, res = applyEntry(img, img.Offset+1, data)
		if err, ok := res.(error); ok {
			t.Fatal(err)
		}
	}
	apply(&clientQuotaRecord{Entity: e, Set: map[string]float64{QuotaProducerByteRate: 100, QuotaRequestPercentage: 5}})
	apply(&clientQuotaRecord{Entity: QuotaEntity{IP: DefaultQuotaName}, Set: map[string]float64{QuotaConnectionCreationRate: 3}})
	apply(&clientQuotaRecord{Entity: e, Remove: []string{QuotaRequestPercentage}})
	if got := img.ClientQuotas(e); !maps.Equal(got, map[string]float64{QuotaProducerByteRate: 100}) {
		t.Fatalf("quotas of %v: %v", e, got)
	}
	// An invalid record is rejected and changes nothing.
	before := img.Quotas
	data, _ := encodeRecord(recClientQuota, &clientQuotaRecord{Entity: e, Set: map[string]float64{"nope": 1}})
	var res any
	img, res = applyEntry(img, img.Offset+1, data)
	if err, _ := res.(error); !errors.Is(err, ErrInvalidQuota) || len(img.Quotas) != len(before) {
		t.Fatalf("invalid record: %v, quotas %v", res, img.Quotas)
	}

	var buf bytes.Buffer
	if err := writeSnapshot(&buf, img); err != nil {
		t.Fatal(err)
	}
	got, err := readSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Quotas) != 2 || !maps.Equal(got.ClientQuotas(e), img.ClientQuotas(e)) {
		t.Fatalf("restored %v, want %v", got.Quotas, img.Quotas)
	}
	apply(&clientQuotaRecord{Entity: e, Remove: []string{QuotaProducerByteRate}})
	apply(&clientQuotaRecord{Entity: QuotaEntity{IP: DefaultQuotaName}, Remove: []string{QuotaConnectionCreationRate}})
	if img.Quotas != nil {
		t.Fatalf("quotas after removing every value: %v", img.Quotas)
	}
}
