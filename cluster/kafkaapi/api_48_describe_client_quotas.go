package kafkaapi

// DescribeClientQuotas (key 48).
//
// Answers from this node's metadata image the quota values of every
// entity the filter matches, as Kafka's ClientQuotasImage.describe does:
// a component of match type exact (a name), default (the type's default
// entity) or any (the type present, default included); with strict the
// entity has no other types. A bad filter (an empty or repeated type, a
// match string where none belongs, ip with user or client-id) is
// INVALID_REQUEST, an unknown type UNSUPPORTED_VERSION, as in Kafka.
// Needs DESCRIBE_CONFIGS on the CLUSTER (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/errcode"
	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/metadata"
)

func init() {
	register(apiSpec{key: 48, min: 0, max: 1, handle: (*Handlers).handleDescribeClientQuotas, actions: server.ClusterAction(kmsg.ACLOperationDescribeConfigs)})
}

func (h *Handlers) handleDescribeClientQuotas(_ context.Context, rc *server.RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = errcode.Of(err), errcode.Message(err)
		return resp, nil
	}
	if !rc.AuthorizedCluster(kmsg.ACLOperationDescribeConfigs) {
		return fail(kerr.ClusterAuthorizationFailed)
	}
	f, err := quotaFilter(req)
	if err != nil {
		return fail(err)
	}
	for _, e := range h.image().QuotaEntries() {
		if !f.Matches(e.Entity) {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, c := range quotaComponents(e.Entity) {
			ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = c.typ, c.name
			entry.Entity = append(entry.Entity, ent)
		}
		for _, k := range slices.Sorted(maps.Keys(e.Values)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, e.Values[k]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp, nil
}

// quotaFilter checks the request's components as Kafka does.
func quotaFilter(req *kmsg.DescribeClientQuotasRequest) (*metadata.QuotaFilter, error) {
	f := &metadata.QuotaFilter{Exact: map[string]metadata.QuotaName{}, Strict: req.Strict}
	seen := map[string]bool{}
	for _, c := range req.Components {
		var probe metadata.QuotaEntity
		_, known := probe.Component(c.EntityType)
		switch {
		case c.EntityType == "":
			return nil, fmt.Errorf("%w: invalid empty entity type", kerr.InvalidRequest)
		case seen[c.EntityType]:
			return nil, fmt.Errorf("%w: entity type %s cannot appear more than once in the filter", kerr.InvalidRequest, c.EntityType)
		case !known:
			return nil, fmt.Errorf("%w: unsupported entity type %s", kerr.UnsupportedVersion, c.EntityType)
		}
		seen[c.EntityType] = true
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return nil, fmt.Errorf("%w: MATCH_TYPE_EXACT with a null match string", kerr.InvalidRequest)
			}
			f.Exact[c.EntityType] = metadata.Named(*c.Match)
		case kmsg.QuotasMatchTypeDefault, kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return nil, fmt.Errorf("%w: match type %v with a match string", kerr.InvalidRequest, c.MatchType)
			}
			if c.MatchType == kmsg.QuotasMatchTypeDefault {
				f.Exact[c.EntityType] = metadata.DefaultQuotaName
			} else {
				f.Specified = append(f.Specified, c.EntityType)
			}
		default:
			return nil, fmt.Errorf("%w: unknown match type %d", kerr.InvalidRequest, c.MatchType)
		}
	}
	if seen[metadata.QuotaEntityIP] && (seen[metadata.QuotaEntityUser] || seen[metadata.QuotaEntityClientID]) {
		return nil, fmt.Errorf("%w: an ip filter component cannot be used with user or client-id components", kerr.InvalidRequest)
	}
	return f, nil
}

// quotaComponent is one (type, name) pair of an entity on the wire; a
// nil name is the default entity.
type quotaComponent struct {
	typ  string
	name *string
}

func quotaComponents(e metadata.QuotaEntity) []quotaComponent {
	var out []quotaComponent
	add := func(t string, q metadata.QuotaName) {
		if !q.Set {
			return
		}
		c := quotaComponent{typ: t}
		if !q.IsDefault() {
			c.name = &q.Name
		}
		out = append(out, c)
	}
	add(metadata.QuotaEntityUser, e.User)
	add(metadata.QuotaEntityClientID, e.ClientID)
	add(metadata.QuotaEntityIP, e.IP)
	return out
}
