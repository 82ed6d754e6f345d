package features

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Feature names, as Kafka spells them.
const (
	MetadataVersion    = "metadata.version"
	KRaftVersion       = "kraft.version"
	TransactionVersion = "transaction.version"
	GroupVersion       = "group.version"
)

// The metadata.version levels (kbroker's own numbering, see the package
// documentation).
const (
	// MetadataVersionBaseline: no finalized level in the log.
	MetadataVersionBaseline int16 = 1
	// MetadataVersionFeatureLevels: FeatureLevel records, snapshot format 2.
	MetadataVersionFeatureLevels int16 = 2
	// MetadataVersionAlterPartitionBatch: the AlterPartition controller
	// operation and its PartitionChangeBatch record (many partitions'
	// changes in one raft entry).
	MetadataVersionAlterPartitionBatch int16 = 3
	// MetadataVersionDelegationTokens: delegation tokens (KIP-48), the
	// DelegationToken and RemoveDelegationToken records.
	MetadataVersionDelegationTokens int16 = 4
	// MetadataVersionRemoteLogMetadata: RemoteSegment records (tiered
	// storage's remote log segment metadata) and their snapshot section.
	MetadataVersionRemoteLogMetadata int16 = 5
	// LatestMetadataVersion is the highest level this build knows.
	LatestMetadataVersion = MetadataVersionRemoteLogMetadata
)

// Range is the levels a node supports of a feature, both ends included
// (Kafka's SupportedVersionRange).
type Range struct {
	Min int16 `json:"min"`
	Max int16 `json:"max"`
}

// Contains reports whether level is in r.
func (r Range) Contains(level int16) bool { return r.Min <= level && level <= r.Max }

// String is Kafka's VersionRange text: "1-2", or "1" for one level.
func (r Range) String() string {
	if r.Min == r.Max {
		return strconv.Itoa(int(r.Min))
	}
	return fmt.Sprintf("%d-%d", r.Min, r.Max)
}

// disabled is the range of a feature a node does not know (Kafka's
// QuorumFeatures.DISABLED).
var disabled = Range{0, 0}

var supported = map[string]Range{
	MetadataVersion:    {MetadataVersionBaseline, LatestMetadataVersion},
	KRaftVersion:       {1, 1},
	TransactionVersion: {0, 1},
	GroupVersion:       {0, 1},
}

// baseline is what a build before feature levels supports: it registers
// no ranges, and it runs what Implied finalizes.
var baseline = map[string]Range{
	MetadataVersion:    {MetadataVersionBaseline, MetadataVersionBaseline},
	KRaftVersion:       {1, 1},
	TransactionVersion: {0, 1},
	GroupVersion:       {1, 1},
}

// implied is frozen: every build applies the first FeatureLevel record of
// a cluster created before feature levels on top of it.
var implied = map[string]int16{
	MetadataVersion: MetadataVersionBaseline,
	KRaftVersion:    1,
	GroupVersion:    1,
}

// Supported returns the levels this build supports, by feature name (the
// SupportedFeatures of ApiVersions v3+, the ranges a broker registers). The
// caller owns the map.
func Supported() map[string]Range { return maps.Clone(supported) }

// Baseline returns the levels a node that registered no ranges supports
// (a build before feature levels). The caller owns the map.
func Baseline() map[string]Range { return maps.Clone(baseline) }

// Implied returns the finalized levels of a cluster whose log holds none
// (metadata.version 1). The caller owns the map.
func Implied() map[string]int16 { return maps.Clone(implied) }

// Bootstrap returns the levels a new cluster finalizes at its first start:
// metadata.version at this build's latest, the others at their defaults
// (transaction.version 0, not listed). The caller owns the map.
func Bootstrap() map[string]int16 {
	return map[string]int16{MetadataVersion: LatestMetadataVersion, KRaftVersion: 1, GroupVersion: 1}
}

// ErrUnsupportedFeature: a cluster finalized a level this build (or a
// registering broker) does not support. Kafka: UNSUPPORTED_VERSION.
var ErrUnsupportedFeature = errors.New("unsupported finalized feature level")

// Check reports whether a node supporting sup (nil: Baseline) can run a
// cluster that finalized the levels of finalized. The error names the
// feature, the finalized level and the supported range.
func Check(finalized map[string]int16, sup map[string]Range) error {
	if sup == nil {
		sup = baseline
	}
	for _, name := range slices.Sorted(maps.Keys(finalized)) {
		level := finalized[name]
		r, ok := sup[name]
		switch {
		case level == 0 || ok && r.Contains(level):
		case !ok:
			return fmt.Errorf("%w: the cluster finalized %s at level %d, which this build does not know", ErrUnsupportedFeature, name, level)
		default:
			return fmt.Errorf("%w: the cluster finalized %s at level %d, and this build supports levels %v", ErrUnsupportedFeature, name, level, r)
		}
	}
	return nil
}
