package features

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// UpgradeType is Kafka's FeatureUpdate.UpgradeType (UpdateFeatures v1's
// UpgradeType; v0's AllowDowngrade maps to SafeDowngrade).
type UpgradeType int8

const (
	Upgrade         UpgradeType = 1
	SafeDowngrade   UpgradeType = 2
	UnsafeDowngrade UpgradeType = 3
)

// Update is one feature of an UpdateFeatures request: finalize Feature at
// MaxLevel (0 removes it, for a feature other than metadata.version).
type Update struct {
	Feature     string      `json:"feature"`
	MaxLevel    int16       `json:"maxLevel"`
	UpgradeType UpgradeType `json:"upgradeType"`
}

// Level is one finalized level to write (a FeatureLevel record).
type Level struct {
	Feature string `json:"name"`
	Level   int16  `json:"level"`
}

// Node is a node whose support an update must fit: Name as Kafka's
// messages call it ("Local controller 1", "broker 2", "controller 3"),
// Supported its ranges (nil: it registered none, Baseline). Silent: it
// did not say (a voter that did not answer), so no level is safe.
type Node struct {
	Name      string
	Supported map[string]Range
	Silent    bool
}

// ErrInvalidUpdateVersion: an update Kafka refuses with
// INVALID_UPDATE_VERSION. The error text is Kafka's message.
var ErrInvalidUpdateVersion = errors.New("INVALID_UPDATE_VERSION")

type invalidUpdate string

func (e invalidUpdate) Error() string        { return string(e) }
func (e invalidUpdate) Is(target error) bool { return target == ErrInvalidUpdateVersion }

func invalidVersion(name string, level int16, why string) error {
	return invalidUpdate(fmt.Sprintf("Invalid update version %d for feature %s. %s", level, name, why))
}

func invalidMetadataVersion(level int16, why string) error {
	return invalidUpdate(fmt.Sprintf("Invalid metadata.version %d. %s", level, why))
}

// metadataChanges are the metadata.version levels whose records or files
// the level below cannot read: a downgrade across one would lose metadata.
var metadataChanges = []int16{MetadataVersionFeatureLevels, MetadataVersionAlterPartitionBatch, MetadataVersionDelegationTokens, MetadataVersionRemoteLogMetadata}

// Plan validates updates as Kafka's FeatureControlManager does, against
// the finalized levels (with the implied ones) and every node of nodes,
// this controller first. It returns one error per update (nil: valid) and
// the levels to write for the valid updates that change one,
// metadata.version first so that the others apply at its new level. As in
// Kafka, a valid update is written even when another of the request is
// not. A feature named twice in one request is refused in both.
func Plan(updates []Update, finalized map[string]int16, nodes []Node) ([]error, []Level) {
	errs := make([]error, len(updates))
	count := map[string]int{}
	for _, u := range updates {
		count[u.Feature]++
	}
	mv := finalized[MetadataVersion]
	// metadata.version first: the others depend on its new level.
	order := make([]int, len(updates))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return boolInt(updates[b].Feature == MetadataVersion) - boolInt(updates[a].Feature == MetadataVersion)
	})
	var out []Level
	for _, i := range order {
		u := updates[i]
		if count[u.Feature] > 1 {
			errs[i] = invalidVersion(u.Feature, u.MaxLevel, "The request updates this feature more than once.")
			continue
		}
		cur := finalized[u.Feature]
		if errs[i] = check(u, cur, mv, nodes); errs[i] != nil || u.MaxLevel == cur {
			continue
		}
		if u.Feature == MetadataVersion {
			mv = u.MaxLevel
		}
		out = append(out, Level{u.Feature, u.MaxLevel})
	}
	return errs, out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// check is FeatureControlManager.updateFeature for one update of a feature
// finalized at cur, with metadata.version at mv.
func check(u Update, cur, mv int16, nodes []Node) error {
	name, level := u.Feature, u.MaxLevel
	if u.UpgradeType < Upgrade || u.UpgradeType > UnsafeDowngrade {
		return invalidVersion(name, level, "The controller does not support the given upgrade type.")
	}
	if level < 0 {
		return invalidVersion(name, level, "A feature version cannot be less than 0.")
	}
	for _, n := range nodes {
		if n.Silent {
			return invalidVersion(name, level, n.Name+" did not answer, and may not support this feature.")
		}
		sup := n.Supported
		if sup == nil {
			sup = baseline
		}
		r, ok := sup[name]
		if !ok {
			r = disabled
		}
		switch {
		case r.Contains(level):
		case r.Max == 0:
			return invalidVersion(name, level, n.Name+" does not support this feature.")
		default:
			return invalidVersion(name, level, n.Name+" only supports versions "+r.String())
		}
	}
	switch {
	case level < cur && u.UpgradeType == Upgrade:
		return invalidVersion(name, level, "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	case level > cur && u.UpgradeType != Upgrade:
		return invalidVersion(name, level, "Can't downgrade to a newer version.")
	}
	if name == MetadataVersion {
		switch {
		case level < MetadataVersionBaseline:
			return invalidMetadataVersion(level, fmt.Sprintf("Unable to set a metadata.version less than %d", MetadataVersionBaseline))
		case level >= cur:
			return nil
		case !slices.ContainsFunc(metadataChanges, func(c int16) bool { return level < c && c <= cur }):
			return nil
		case u.UpgradeType == UnsafeDowngrade:
			return invalidMetadataVersion(level, "Unsafe metadata downgrade is not supported in this version.")
		default:
			return invalidMetadataVersion(level, "Refusing to perform the requested downgrade because it might delete metadata information. Retry using UNSAFE_DOWNGRADE if you want to force the downgrade to proceed.")
		}
	}
	if level != cur && mv < MetadataVersionFeatureLevels {
		return invalidVersion(name, level, fmt.Sprintf("It requires metadata.version %d or later, and the cluster is at %d.", MetadataVersionFeatureLevels, mv))
	}
	return nil
}

// Apply returns the finalized levels after l (a FeatureLevel record) is
// applied to finalized (nil: Implied), or an error if the record cannot
// apply: no name, metadata.version below the baseline or removed, or
// another feature while metadata.version is below 2. finalized is not
// modified.
func Apply(finalized map[string]int16, l Level) (map[string]int16, error) {
	if finalized == nil {
		finalized = implied
	}
	switch {
	case l.Feature == "" || l.Level < 0:
		return nil, fmt.Errorf("invalid feature level %q=%d", l.Feature, l.Level)
	case l.Feature == MetadataVersion && l.Level < MetadataVersionBaseline:
		return nil, fmt.Errorf("metadata.version %d is below %d", l.Level, MetadataVersionBaseline)
	case l.Feature != MetadataVersion && finalized[MetadataVersion] < MetadataVersionFeatureLevels:
		return nil, fmt.Errorf("%s needs metadata.version %d or later", l.Feature, MetadataVersionFeatureLevels)
	}
	next := maps.Clone(finalized)
	if l.Level == 0 {
		delete(next, l.Feature)
	} else {
		next[l.Feature] = l.Level
	}
	return next, nil
}
