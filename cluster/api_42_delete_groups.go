package cluster

// DeleteGroups (key 42).
//
// A group can be deleted when it has no members (Empty, or Dead):
// NON_EMPTY_GROUP otherwise, GROUP_ID_NOT_FOUND for an unknown group. The
// group becomes Dead at once and tombstones for its offsets and its
// metadata are written; the response waits for them to be replicated and
// carries the write's error for the group if one failed.

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster/group"
	"github.com/kbroker/kbroker/wire/record"
)

func init() {
	register(apiSpec{key: 42, min: 0, max: 2, handle: (*Node).handleDeleteGroups})
}

func (n *Node) handleDeleteGroups(_ context.Context, rc *RequestContext, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	c := n.groups
	type write struct {
		idx  int
		p    int32
		recs []record.Record
	}
	var writes []write
	now := time.Now()
	c.mu.Lock()
	for i, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		resp.Groups = append(resp.Groups, rg)
		if id == "" {
			resp.Groups[i].ErrorCode = kerr.InvalidGroupID.Code
			continue
		}
		g, err := c.groupLocked(id, false)
		switch {
		case err != nil:
			resp.Groups[i].ErrorCode = errorCode(err)
			continue
		case g == nil || g.State() == group.Dead:
			resp.Groups[i].ErrorCode = kerr.GroupIDNotFound.Code
			continue
		case g.State() != group.Empty:
			resp.Groups[i].ErrorCode = kerr.NonEmptyGroup.Code
			continue
		}
		var recs []record.Record
		for tp := range g.Offsets {
			recs = append(recs, record.Record{Key: group.OffsetKey(id, tp)})
		}
		recs = append(recs, record.Record{Key: group.GroupKey(id)})
		g.MarkDead(now)
		delete(c.mu.groups, id)
		writes = append(writes, write{idx: i, p: c.partitionFor(id), recs: recs})
	}
	c.mu.Unlock()
	if len(writes) == 0 {
		return resp, nil
	}
	var mu sync.Mutex
	left := len(writes)
	for _, w := range writes {
		c.store(w.p, w.recs, func(err error) {
			mu.Lock()
			defer mu.Unlock()
			resp.Groups[w.idx].ErrorCode = errorCode(err)
			if left--; left == 0 {
				rc.Respond(resp)
			}
		})
	}
	return nil, nil
}
