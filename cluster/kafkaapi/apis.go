package kafkaapi

import (
	"context"
	"fmt"
	"sort"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handlerMethod is a handler as each api_NN_*.go file declares it: a method
// expression such as (*Handlers).handleProduce, bound by APIs.
type handlerMethod func(h *Handlers, ctx context.Context, rc *server.RequestContext, req kmsg.Request) (kmsg.Response, error)

// apiSpec is one API as its handler file registers it: the only place its
// version range is written. The ranges are those of a Kafka 4.x broker,
// so current clients find what they need.
type apiSpec struct {
	key      int16
	min, max int16
	handle   handlerMethod
	// actions lists the authorizations the request needs (see authz.go),
	// asked of the authorizer in one batch before the handler runs. Nil
	// when the handler asks lazily or needs none.
	actions func(rc *server.RequestContext, req kmsg.Request) []server.Action
}

// registry is the API table every handler file adds itself to from init.
var registry = map[int16]apiSpec{}

// register adds a to the package's API table. A key registered twice
// panics, so the process fails at start rather than serving one of them.
func register(a apiSpec) { registerIn(registry, a) }

func registerIn(table map[int16]apiSpec, a apiSpec) {
	if _, dup := table[a.key]; dup {
		panic(fmt.Sprintf("kafkaapi: api key %d (%s) registered twice", a.key, kmsg.NameForKey(a.key)))
	}
	if a.min < 0 || a.min > a.max {
		panic(fmt.Sprintf("kafkaapi: api key %d: bad version range %d–%d", a.key, a.min, a.max))
	}
	table[a.key] = a
}

// APIs binds every registered API to h, sorted by key: the table the
// connection layer dispatches through and ApiVersions lists.
func (h *Handlers) APIs() []server.API {
	out := make([]server.API, 0, len(registry))
	for _, spec := range registry {
		out = append(out, bindAPI(h, spec))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func bindAPI(h *Handlers, spec apiSpec) server.API {
	handle := spec.handle
	return server.API{
		Key: spec.key, Min: spec.min, Max: spec.max,
		Actions: spec.actions,
		Handle: func(ctx context.Context, rc *server.RequestContext, req kmsg.Request) (kmsg.Response, error) {
			return handle(h, ctx, rc, req)
		},
	}
}
