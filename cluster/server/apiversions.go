package server

import "github.com/twmb/franz-go/pkg/kmsg"

// APIVersions is the ApiVersions answer in version: the served
// APIs' ranges and, from v3, the feature flags. The connection builds it
// itself because it answers ApiVersions before authentication and in v0
// for a version it does not serve.
func (s *Server) APIVersions(version int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = version
	resp.ApiKeys = s.VersionRanges()
	if version >= 3 {
		for _, f := range supportedFeatures {
			sf := kmsg.NewApiVersionsResponseSupportedFeature()
			sf.Name, sf.MinVersion, sf.MaxVersion = f.name, f.min, f.max
			resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		}
	}
	return resp
}

// supportedFeatures are the feature flags kbroker supports, with their
// level ranges.
var supportedFeatures = []struct {
	name     string
	min, max int16
}{
	{"transaction.version", 0, 1},
}
