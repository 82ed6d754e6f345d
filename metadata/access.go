package metadata

import "github.com/kbroker/kbroker/metadata/access"

// The ACLs, SCRAM credentials and client quotas an image holds are
// package access's types; these names keep them where the rest of
// kbroker has always found them. The records, their application and the
// controller operations that propose them stay here.

// ACL codes as Kafka numbers them on the wire; see package access.
const (
	ACLPatternLiteral  = access.ACLPatternLiteral
	ACLPatternPrefixed = access.ACLPatternPrefixed
	ACLPermissionDeny  = access.ACLPermissionDeny
	ACLPermissionAllow = access.ACLPermissionAllow
	ACLWildcard        = access.ACLWildcard
	ACLFilterAny       = access.ACLFilterAny
	ACLPatternMatch    = access.ACLPatternMatch
	ACLResourceAnyRes  = access.ACLResourceAnyRes
)

type (
	// ACL is one access control entry (Kafka's AccessControlEntryRecord).
	ACL = access.ACL
	// ACLs is the immutable, indexed set of ACLs of an image.
	ACLs = access.ACLs
	// ACLFilter selects ACLs as DescribeAcls and DeleteAcls filters do.
	ACLFilter = access.ACLFilter
)

// NewACLs returns an index of acls (their ids must differ), for images
// built outside the log (tests of the authorizer).
func NewACLs(acls []ACL) *ACLs { return access.NewACLs(acls) }

// emptyACLs are the ACLs of an image without any.
var emptyACLs = access.NewACLs(nil)

type (
	// ScramCredential is one user's SCRAM credential for one mechanism
	// (Kafka's UserScramCredentialRecord).
	ScramCredential = access.ScramCredential
	// ScramKey names one credential: a user and a mechanism.
	ScramKey = access.ScramKey
)

// Kafka's quota entity types and quota keys; see package access.
const (
	QuotaEntityUser     = access.QuotaEntityUser
	QuotaEntityClientID = access.QuotaEntityClientID
	QuotaEntityIP       = access.QuotaEntityIP

	QuotaProducerByteRate       = access.QuotaProducerByteRate
	QuotaConsumerByteRate       = access.QuotaConsumerByteRate
	QuotaRequestPercentage      = access.QuotaRequestPercentage
	QuotaControllerMutationRate = access.QuotaControllerMutationRate
	QuotaConnectionCreationRate = access.QuotaConnectionCreationRate
)

// ErrInvalidQuota: an alteration or filter Kafka refuses with
// INVALID_REQUEST (access.ErrInvalidQuota).
var ErrInvalidQuota = access.ErrInvalidQuota

type (
	// QuotaName is one component of a quota entity.
	QuotaName = access.QuotaName
	// QuotaEntity is what a quota applies to (Kafka's ClientQuotaEntity).
	QuotaEntity = access.QuotaEntity
	// QuotaAlteration is one entity's changes: values to set, keys to
	// remove.
	QuotaAlteration = access.QuotaAlteration
	// QuotaEntry is an entity and its values.
	QuotaEntry = access.QuotaEntry
	// QuotaFilter is DescribeClientQuotas' filter.
	QuotaFilter = access.QuotaFilter
)

// Named is the component of an entity named name.
func Named(name string) QuotaName { return access.Named(name) }

// DefaultQuotaName is the component of the default entity of a type.
var DefaultQuotaName = access.DefaultQuotaName

// CheckQuotaEntity checks a combination of entity types as Kafka does.
func CheckQuotaEntity(e QuotaEntity) error { return access.CheckQuotaEntity(e) }

// CheckQuotaValue checks one key and value for an entity whose types
// passed CheckQuotaEntity.
func CheckQuotaValue(e QuotaEntity, key string, v float64) error {
	return access.CheckQuotaValue(e, key, v)
}
