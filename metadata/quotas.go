package metadata

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"

	"github.com/hashicorp/raft"
)

// Client quotas (Kafka's ClientQuotaRecord and ClientQuotasImage): values
// by quota entity, set and described through AlterClientQuotas and
// DescribeClientQuotas, enforced by every broker on its own traffic.

// Kafka's quota entity types.
const (
	QuotaEntityUser     = "user"
	QuotaEntityClientID = "client-id"
	QuotaEntityIP       = "ip"
)

// Kafka's quota keys.
const (
	QuotaProducerByteRate       = "producer_byte_rate"
	QuotaConsumerByteRate       = "consumer_byte_rate"
	QuotaRequestPercentage      = "request_percentage"
	QuotaControllerMutationRate = "controller_mutation_rate"
	QuotaConnectionCreationRate = "connection_creation_rate"
)

// quotaKeyIntegral tells the keys of user/client-id entities and whether
// their values must be whole numbers (Kafka's LONG keys) or may be
// fractional (DOUBLE).
var quotaKeyIntegral = map[string]bool{
	QuotaProducerByteRate:       true,
	QuotaConsumerByteRate:       true,
	QuotaRequestPercentage:      false,
	QuotaControllerMutationRate: false,
}

// ErrInvalidQuota: an alteration or filter Kafka refuses with
// INVALID_REQUEST (an unknown key or entity type, a value <= 0, an entity
// combining ip with user or client-id).
var ErrInvalidQuota = errors.New("metadata: invalid client quota")

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

// QuotaName is one component of a quota entity. Set tells the entity has
// this type; Name "" then means the type's default entity (Kafka's null
// name: an empty name is refused, so "" is free to mean default).
type QuotaName struct {
	Set  bool   `json:"set,omitempty"`
	Name string `json:"name,omitempty"`
}

// Named is the component of an entity named name.
func Named(name string) QuotaName { return QuotaName{Set: true, Name: name} }

// DefaultQuotaName is the component of the default entity of a type.
var DefaultQuotaName = QuotaName{Set: true}

// IsDefault reports whether q names the default entity of its type.
func (q QuotaName) IsDefault() bool { return q.Set && q.Name == "" }

// QuotaEntity is what a quota applies to (Kafka's ClientQuotaEntity): a
// user, a client id, both, or an ip, each named or the default.
type QuotaEntity struct {
	User     QuotaName `json:"user,omitzero"`
	ClientID QuotaName `json:"clientId,omitzero"`
	IP       QuotaName `json:"ip,omitzero"`
}

func (e QuotaEntity) String() string {
	s := ""
	add := func(t string, q QuotaName) {
		if !q.Set {
			return
		}
		if s != "" {
			s += ","
		}
		if q.IsDefault() {
			s += t + "=<default>"
		} else {
			s += t + "=" + q.Name
		}
	}
	add(QuotaEntityUser, e.User)
	add(QuotaEntityClientID, e.ClientID)
	add(QuotaEntityIP, e.IP)
	return "{" + s + "}"
}

// Component returns the component of entity type t and whether t is one
// of Kafka's types.
func (e *QuotaEntity) Component(t string) (*QuotaName, bool) {
	switch t {
	case QuotaEntityUser:
		return &e.User, true
	case QuotaEntityClientID:
		return &e.ClientID, true
	case QuotaEntityIP:
		return &e.IP, true
	}
	return nil, false
}

// size is the number of types the entity has.
func (e QuotaEntity) size() int {
	n := 0
	for _, q := range []QuotaName{e.User, e.ClientID, e.IP} {
		if q.Set {
			n++
		}
	}
	return n
}

// CheckQuotaEntity checks a combination of types as Kafka's
// ClientQuotaControlManager does: not empty, ip alone, a valid ip.
func CheckQuotaEntity(e QuotaEntity) error {
	switch {
	case e.size() == 0:
		return fmt.Errorf("%w: invalid empty client quota entity", ErrInvalidQuota)
	case e.IP.Set && (e.User.Set || e.ClientID.Set):
		return fmt.Errorf("%w: invalid quota entity combination, ip entity should not be combined with user or client-id", ErrInvalidQuota)
	case e.IP.Set && !e.IP.IsDefault() && net.ParseIP(e.IP.Name) == nil:
		// Kafka resolves host names too; a broker that resolves names on
		// an admin request blocks on DNS, so only addresses are taken.
		return fmt.Errorf("%w: %s is not a valid IP", ErrInvalidQuota, e.IP.Name)
	}
	return nil
}

// CheckQuotaValue checks one key and value for an entity whose types
// passed CheckQuotaEntity.
func CheckQuotaValue(e QuotaEntity, key string, v float64) error {
	var integral, ok bool
	var limit float64
	if e.IP.Set {
		integral, ok, limit = true, key == QuotaConnectionCreationRate, math.MaxInt32
	} else {
		integral, ok = quotaKeyIntegral[key]
		limit = math.MaxInt64
	}
	switch {
	case !ok:
		return fmt.Errorf("%w: invalid configuration key %s", ErrInvalidQuota, key)
	case math.IsNaN(v) || v <= 0:
		return fmt.Errorf("%w: quota %s must be greater than 0", ErrInvalidQuota, key)
	case integral && v > limit:
		return fmt.Errorf("%w: proposed value for %s is too large", ErrInvalidQuota, key)
	case integral && math.Abs(math.Mod(v, 1)) > 1e-6:
		return fmt.Errorf("%w: %s cannot be a fractional value", ErrInvalidQuota, key)
	case math.IsInf(v, 0):
		return fmt.Errorf("%w: quota %s must be finite", ErrInvalidQuota, key)
	}
	return nil
}

// QuotaAlteration is one entity's changes: values to set, keys to remove.
type QuotaAlteration struct {
	Entity QuotaEntity        `json:"entity"`
	Set    map[string]float64 `json:"set,omitempty"`
	Remove []string           `json:"remove,omitempty"`
}

// clientQuotaRecord sets and removes quota values of one entity, at once.
type clientQuotaRecord = QuotaAlteration

// Check validates an alteration as the FSM requires it.
func (a *QuotaAlteration) Check() error {
	if err := CheckQuotaEntity(a.Entity); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(a.Set)) {
		if err := CheckQuotaValue(a.Entity, k, a.Set[k]); err != nil {
			return err
		}
	}
	return nil
}

// ClientQuotas returns the quota values of an entity (nil if none); the
// map must not be modified.
func (i *Image) ClientQuotas(e QuotaEntity) map[string]float64 { return i.Quotas[e] }

// QuotaEntry is an entity and its values, as DescribeClientQuotas lists
// them and snapshots store them.
type QuotaEntry struct {
	Entity QuotaEntity        `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// QuotaEntries returns every entity with quotas, sorted by entity.
func (i *Image) QuotaEntries() []QuotaEntry {
	out := make([]QuotaEntry, 0, len(i.Quotas))
	for e, v := range i.Quotas {
		out = append(out, QuotaEntry{Entity: e, Values: v})
	}
	slices.SortFunc(out, func(a, b QuotaEntry) int { return compareEntity(a.Entity, b.Entity) })
	return out
}

func compareEntity(a, b QuotaEntity) int {
	c := func(x, y QuotaName) int {
		return cmp.Or(cmp.Compare(b2i(x.Set), b2i(y.Set)), cmp.Compare(x.Name, y.Name))
	}
	return cmp.Or(c(a.User, b.User), c(a.ClientID, b.ClientID), c(a.IP, b.IP))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// QuotaFilter is DescribeClientQuotas' filter: Exact holds types that
// must have the given name (DefaultQuotaName for MATCH_TYPE_DEFAULT),
// Specified types that must be present with any name; with Strict the
// entity has no other types.
type QuotaFilter struct {
	Exact     map[string]QuotaName
	Specified []string
	Strict    bool
}

// Matches reports whether e passes the filter (Kafka's
// ClientQuotasImage.matches).
func (f *QuotaFilter) Matches(e QuotaEntity) bool {
	if f.Strict && e.size() != len(f.Exact)+len(f.Specified) {
		return false
	}
	for t, want := range f.Exact {
		got, ok := e.Component(t)
		if !ok || *got != want {
			return false
		}
	}
	for _, t := range f.Specified {
		got, ok := e.Component(t)
		if !ok || !got.Set {
			return false
		}
	}
	return true
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
