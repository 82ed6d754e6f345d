package metadata

import (
	"bytes"
	"errors"
	"maps"
	"testing"
)

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
