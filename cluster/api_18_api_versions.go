package cluster

// ApiVersions (key 18).
//
// Lists the version range of every API in the dispatch table. A request
// in a version we do not serve is answered in v0 with UNSUPPORTED_VERSION
// and the ranges (see conn.dispatch), as Kafka does, so the client can
// retry with a version we know. SaslHandshake and SaslAuthenticate are
// listed only on SASL listeners (conn.apiVersionsResponse).

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
	return resp
}
