package metadata

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/hashicorp/raft"
	"github.com/kbroker/kbroker/metadata/features"
)

// Feature levels (the rules are metadata/features'): the FeatureLevel
// record, the image's finalized levels and UpdateFeatures.

// recFeatureLevel is numbered as UpdateFeatures' API key, far from the
// others (see brokers.go).
const recFeatureLevel recordType = 57

var (
	// ErrInvalidUpdateVersion: Kafka INVALID_UPDATE_VERSION; the text is
	// Kafka's message.
	ErrInvalidUpdateVersion = features.ErrInvalidUpdateVersion
	// ErrUnsupportedFeature: a finalized level this node or a registering
	// broker does not support. Kafka: UNSUPPORTED_VERSION.
	ErrUnsupportedFeature = features.ErrUnsupportedFeature
)

func init() {
	errorCodes = append(errorCodes,
		struct {
			code string
			err  error
		}{"INVALID_UPDATE_VERSION", ErrInvalidUpdateVersion},
		struct {
			code string
			err  error
		}{"UNSUPPORTED_FEATURE", ErrUnsupportedFeature})
	recordNames[recFeatureLevel] = "FeatureLevel"
}

// featureLevelRecord finalizes one feature at a level (Kafka's
// FeatureLevelRecord): {"name": "metadata.version", "level": 2}.
type featureLevelRecord = features.Level

// applyFeatureLevel re-checks what the controller checked against the
// image: features.Apply's rules, and that every registered broker
// supports the level (one may have registered meanwhile).
func applyFeatureLevel(img *Image, index uint64, r *featureLevelRecord) error {
	next, err := features.Apply(img.features, *r)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidUpdateVersion, err)
	}
	for _, id := range slices.Sorted(maps.Keys(img.Brokers)) {
		if err := features.Check(map[string]int16{r.Feature: r.Level}, img.Brokers[id].Features); err != nil {
			return fmt.Errorf("%w: broker %d: %v", ErrInvalidUpdateVersion, id, err)
		}
	}
	img.features, img.featuresEpoch = next, int64(index)
	return nil
}

// Features returns the finalized feature levels by name (levels above 0
// only; metadata.version always): Kafka's FinalizedFeatures. The caller
// owns the map.
func (i *Image) Features() map[string]int16 {
	if i.features == nil {
		return features.Implied()
	}
	return maps.Clone(i.features)
}

// FeatureLevel is the finalized level of one feature (0 when none is),
// without copying the map: for request paths.
func (i *Image) FeatureLevel(name string) int16 {
	if i.features == nil {
		return features.Implied()[name]
	}
	return i.features[name]
}

// FeaturesEpoch is the raft index of the last record that changed the
// finalized levels (Kafka's FinalizedFeaturesEpoch); 0 while the levels
// are the implied ones of a cluster created before feature levels.
func (i *Image) FeaturesEpoch() int64 { return i.featuresEpoch }

// CheckSupported returns an error naming the feature, its finalized level
// and this build's range when img finalized a level this build does not
// support. WaitReady checks it; a node that follows the log may check
// every image.
func CheckSupported(img *Image) error {
	if err := features.Check(img.Features(), features.Supported()); err != nil {
		return fmt.Errorf("metadata: this node cannot run this cluster, upgrade it first: %w", err)
	}
	return nil
}

// FeatureResult is the outcome of one update of UpdateFeatures: nil, or
// an error that unwraps to ErrInvalidUpdateVersion with Kafka's message as
// its text (or the error that kept its record from committing).
type FeatureResult struct {
	Feature string
	Err     error
}

type updateFeaturesRequest struct {
	Updates      []features.Update `json:"updates"`
	ValidateOnly bool              `json:"validateOnly"`
}

// UpdateFeatures is Kafka's UpdateFeatures on the active controller: each
// update is validated (features.Plan) against the finalized levels, this
// controller, every registered broker and every other voter (asked, like
// DescribeQuorum asks them); unless validateOnly, the valid ones that
// change a level are written as FeatureLevel records. One result per
// update, in order.
func (s *Store) UpdateFeatures(ctx context.Context, updates []features.Update, validateOnly bool) ([]FeatureResult, error) {
	res, err := call(ctx, s, opUpdateFeatures, updateFeaturesRequest{updates, validateOnly})
	if err != nil {
		return nil, err
	}
	errs := results(len(updates), res, nil)
	out := make([]FeatureResult, len(updates))
	for i, u := range updates {
		out[i] = FeatureResult{u.Feature, errs[i]}
	}
	return out, nil
}

var opUpdateFeatures = defineOp("UpdateFeatures", nil, (*Store).updateFeatures)

func (s *Store) updateFeatures(ctx context.Context, r updateFeaturesRequest) (errorList, error) {
	s.featuresMu.Lock() // each update is decided on the levels the one before wrote
	defer s.featuresMu.Unlock()
	img := s.Image()
	nodes := []features.Node{{Name: "Local controller " + strconv.Itoa(int(s.cfg.NodeID)), Supported: features.Supported()}}
	for _, id := range slices.Sorted(maps.Keys(img.Brokers)) {
		nodes = append(nodes, features.Node{Name: "broker " + strconv.Itoa(int(id)), Supported: img.Brokers[id].Features})
	}
	cf := s.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return nil, raftError(err)
	}
	voters := slices.DeleteFunc(cf.Configuration().Servers, func(v raft.Server) bool { return v.Suffrage != raft.Voter })
	answers := s.probeReplicas(ctx, voters)
	for _, v := range voters {
		if id, ok := nodeID(v.ID); ok && id != s.cfg.NodeID {
			a, ok := answers[id]
			nodes = append(nodes, features.Node{Name: "controller " + strconv.Itoa(int(id)), Supported: a.state.Features, Silent: !ok})
		}
	}
	errs, levels := features.Plan(r.Updates, img.Features(), nodes)
	if r.ValidateOnly {
		return errs, nil
	}
	for _, l := range levels {
		if _, err := s.propose(ctx, recFeatureLevel, &l); err != nil {
			errs[slices.IndexFunc(r.Updates, func(u features.Update) bool { return u.Feature == l.Feature })] = err
		}
	}
	return errs, nil
}
