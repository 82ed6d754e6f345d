package access

import (
	"errors"
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
