package metadata

import (
	"context"
	"maps"
	"slices"

	"github.com/hashicorp/raft"
	"github.com/kbroker/kbroker/metadata/access"
)

// Client quotas (Kafka's ClientQuotaRecord and ClientQuotasImage): values
// by quota entity, set and described through AlterClientQuotas and
// DescribeClientQuotas, enforced by every broker on its own traffic.

// recClientQuota is the record type of clientQuotaRecord (far from the
// others so that types added meanwhile elsewhere cannot collide with it).
const recClientQuota recordType = 48

func init() {
	errorCodes = append(errorCodes, struct {
		code string
		err  error
	}{"INVALID_QUOTA", ErrInvalidQuota})
	recordNames[recClientQuota] = "ClientQuota"
}

// clientQuotaRecord sets and removes quota values of one entity, at once.
type clientQuotaRecord = QuotaAlteration

// ClientQuotas returns the quota values of an entity (nil if none); the
// map must not be modified.
func (i *Image) ClientQuotas(e QuotaEntity) map[string]float64 { return i.Quotas[e] }

// QuotaEntries returns every entity with quotas, sorted by entity.
func (i *Image) QuotaEntries() []QuotaEntry {
	out := make([]QuotaEntry, 0, len(i.Quotas))
	for e, v := range i.Quotas {
		out = append(out, QuotaEntry{Entity: e, Values: v})
	}
	slices.SortFunc(out, func(a, b QuotaEntry) int { return access.CompareQuotaEntities(a.Entity, b.Entity) })
	return out
}

// applyClientQuota sets and removes values of an entity; an entity left
// without values is forgotten.
func applyClientQuota(img *Image, r *clientQuotaRecord) error {
	if err := r.Check(); err != nil {
		return err
	}
	vals := maps.Clone(img.Quotas[r.Entity])
	if vals == nil {
		vals = map[string]float64{}
	}
	maps.Copy(vals, r.Set)
	for _, k := range r.Remove {
		delete(vals, k)
	}
	img.Quotas = maps.Clone(img.Quotas)
	if img.Quotas == nil {
		img.Quotas = map[QuotaEntity]map[string]float64{}
	}
	if len(vals) == 0 {
		delete(img.Quotas, r.Entity)
	} else {
		img.Quotas[r.Entity] = vals
	}
	if len(img.Quotas) == 0 {
		img.Quotas = nil // as a snapshot without quotas restores it
	}
	return nil
}

// AlterClientQuotas applies alterations, one record per entity (so an
// entity's changes apply together); one result per alteration. Values
// equal to the current ones and removals of absent keys write nothing,
// as in Kafka. The caller checks the alterations first (Check).
func (s *Store) AlterClientQuotas(ctx context.Context, alts []QuotaAlteration) []error {
	res, err := call(ctx, s, opAlterClientQuotas, alts)
	return results(len(alts), res, err)
}

var opAlterClientQuotas = defineOp("AlterClientQuotas", nil,
	func(s *Store, ctx context.Context, alts []QuotaAlteration) (errorList, error) {
		img := s.Image()
		errs := make(errorList, len(alts))
		futures := make([]raft.ApplyFuture, len(alts))
		for i := range alts {
			if errs[i] = alts[i].Check(); errs[i] != nil {
				continue
			}
			cur := img.Quotas[alts[i].Entity]
			rec := clientQuotaRecord{Entity: alts[i].Entity}
			for k, v := range alts[i].Set {
				if old, ok := cur[k]; !ok || old != v {
					if rec.Set == nil {
						rec.Set = map[string]float64{}
					}
					rec.Set[k] = v
				}
			}
			for _, k := range alts[i].Remove {
				if _, ok := cur[k]; ok {
					rec.Remove = append(rec.Remove, k)
				}
			}
			if len(rec.Set) == 0 && len(rec.Remove) == 0 {
				continue
			}
			futures[i], errs[i] = s.start(ctx, recClientQuota, &rec)
		}
		for i, f := range futures {
			if f != nil {
				_, errs[i] = s.finish(ctx, f)
			}
		}
		return errs, nil
	})
