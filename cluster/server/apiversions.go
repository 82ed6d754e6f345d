package server

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/metadata/features"
)

// APIVersions is the ApiVersions answer in version: the served APIs'
// ranges and, from v3, the feature levels this build supports and those
// the cluster finalized (KIP-584). The connection builds it itself
// because it answers ApiVersions before authentication and in v0 for a
// version it does not serve.
func (s *Server) APIVersions(version int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = version
	resp.ApiKeys = s.VersionRanges()
	if version < 3 {
		return resp
	}
	supported := features.Supported()
	for _, name := range slices.Sorted(maps.Keys(supported)) {
		r := supported[name]
		// Before v4 a minimum of 0 broke older clients (KAFKA-17011):
		// such a feature is listed from level 1, or not at all.
		if version < 4 && r.Min == 0 {
			if r.Max < 1 {
				continue
			}
			r.Min = 1
		}
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = name, r.Min, r.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	}
	if s.cfg.FinalizedFeatures == nil {
		return resp
	}
	finalized, epoch := s.cfg.FinalizedFeatures()
	resp.FinalizedFeaturesEpoch = epoch
	for _, name := range slices.Sorted(maps.Keys(finalized)) {
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, finalized[name], finalized[name]
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	return resp
}
