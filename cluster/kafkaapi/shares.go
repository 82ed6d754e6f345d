package kafkaapi

// What the share group handlers (api_76 … api_92, KIP-932) share: the
// share coordinator's FindCoordinator key, a group id's other types, and
// the share-partition state keys of the state APIs.

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/cluster/share"
	"github.com/kbroker/kbroker/metadata"
)

// parseShareKey parses a FindCoordinator share key, group:topicId:partition.
func parseShareKey(key string) (share.StateKey, error) {
	i := strings.LastIndexByte(key, ':')
	if i < 0 {
		return share.StateKey{}, fmt.Errorf("%w: share key %q is not group:topicId:partition", kerr.InvalidRequest, key)
	}
	j := strings.LastIndexByte(key[:i], ':')
	if j <= 0 {
		return share.StateKey{}, fmt.Errorf("%w: share key %q is not group:topicId:partition", kerr.InvalidRequest, key)
	}
	p, err := strconv.ParseInt(key[i+1:], 10, 32)
	id, ierr := base64.RawURLEncoding.DecodeString(key[j+1 : i])
	if err != nil || p < 0 || ierr != nil || len(id) != 16 {
		return share.StateKey{}, fmt.Errorf("%w: share key %q is not group:topicId:partition", kerr.InvalidRequest, key)
	}
	k := share.StateKey{Group: key[:j], Partition: int32(p)}
	copy(k.TopicID[:], id)
	return k, nil
}

// findShareCoordinator answers FindCoordinator for a share key.
func (h *Handlers) findShareCoordinator(ctx context.Context, rc *server.RequestContext, key string) (int32, string, int32, error) {
	if !rc.AuthorizedCluster(kmsg.ACLOperationClusterAction) {
		return -1, "", -1, kerr.ClusterAuthorizationFailed
	}
	if _, err := parseShareKey(key); err != nil {
		return -1, "", -1, err
	}
	id, ep, err := h.shares.Topic().CoordinatorFor(ctx, key, rc.Listener)
	if err != nil {
		return -1, "", -1, err
	}
	return id, ep.Host, ep.Port, nil
}

// otherGroupType reports whether id is a classic or consumer group: a
// share group of that id is GROUP_ID_NOT_FOUND ("not a share group"), as
// in Kafka.
func (h *Handlers) otherGroupType(id string) bool {
	if _, err := h.groups.Describe(id); err == nil {
		return true
	}
	_, err := h.groups.DescribeConsumer(id)
	return err == nil
}

// topicNameByID is the name of topic id, or UNKNOWN_TOPIC_ID.
func topicNameByID(img *metadata.Image, id [16]byte) (string, error) {
	t, ok := img.TopicsByID[id]
	if !ok {
		return "", kerr.UnknownTopicID
	}
	return t.Name, nil
}
