package access

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
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

// Check validates an alteration as the FSM requires it (the ClientQuota
// record's payload is an alteration).
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

// QuotaEntry is an entity and its values, as DescribeClientQuotas lists
// them and snapshots store them.
type QuotaEntry struct {
	Entity QuotaEntity        `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// CompareQuotaEntities orders entities as DescribeClientQuotas lists them
// and snapshots store them: by user, then client id, then ip, an absent
// type first.
func CompareQuotaEntities(a, b QuotaEntity) int {
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
