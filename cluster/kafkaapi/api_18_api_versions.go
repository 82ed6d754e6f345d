package kafkaapi

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

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiSpec{key: 18, min: 0, max: 4, handle: (*Handlers).handleApiVersions})
}

func (h *Handlers) handleApiVersions(_ context.Context, rc *server.RequestContext, _ kmsg.Request) (kmsg.Response, error) {
	return rc.APIVersionsResponse(), nil
}
