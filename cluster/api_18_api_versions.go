package cluster

// ApiVersions (key 18).
//
// Lists the version range of every API in the dispatch table. A request
// in a version we do not serve is answered in v0 with UNSUPPORTED_VERSION
// and the ranges (see conn.dispatch), as Kafka does, so the client can
// retry with a version we know. SaslHandshake and SaslAuthenticate are
// listed only on SASL listeners (conn.apiVersionsResponse).
//
// From v3 the response also carries the feature flags (KIP-584) the
// broker supports and the levels finalized for the cluster. kbroker lists
// transaction.version with a maximum of 1 and finalizes no level: level 2
// is KIP-890 part 2 (an epoch bump at every EndTxn, implicit
// AddPartitionsToTxn with Produce v12), which kbroker does not do, and a
// client only takes that path when the cluster finalized it at 2.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 18, min: 0, max: 4, handle: (*Node).handleApiVersions})
}

func (n *Node) handleApiVersions(_ context.Context, rc *RequestContext, _ kmsg.Request) (kmsg.Response, error) {
	return rc.conn.apiVersionsResponse(rc.Header.APIVersion), nil
}

func (s *Server) apiVersionsResponse(version int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = version
	resp.ApiKeys = s.versionRanges()
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
