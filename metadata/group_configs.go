package metadata

// Group configs (Kafka's GROUP config resource, type 32): a share
// group's share.* overrides, kept by group id in the image. The keys and
// their bounds are the caller's (the handlers validate with package
// config); the controller only stores them.

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// recGroupConfigChange is far from the other record types so that types
// added meanwhile elsewhere cannot collide with it.
const (
	recGroupConfigChange  recordType = 232
	groupConfigChangeName string     = "GroupConfigChange"
)

func init() { recordNames[recGroupConfigChange] = groupConfigChangeName }

// groupConfigChangeRecord sets and removes configs of one group.
type groupConfigChangeRecord struct {
	Group  string            `json:"group"`
	Set    map[string]string `json:"set,omitempty"`
	Remove []string          `json:"remove,omitempty"`
}

func applyGroupConfigChange(img *Image, r *groupConfigChangeRecord) error {
	if r.Group == "" {
		return fmt.Errorf("%w: empty group id", ErrInvalidConfig)
	}
	c := maps.Clone(img.GroupConfigs[r.Group])
	if c == nil {
		c = map[string]string{}
	}
	for _, k := range r.Remove {
		delete(c, k)
	}
	maps.Copy(c, r.Set)
	all := maps.Clone(img.GroupConfigs)
	if all == nil {
		all = map[string]map[string]string{}
	}
	if len(c) == 0 {
		delete(all, r.Group)
	} else {
		all[r.Group] = c
	}
	img.GroupConfigs = all
	return nil
}

// AlterGroupConfigs sets and removes the configs of group (already
// validated by the caller).
func (s *Store) AlterGroupConfigs(ctx context.Context, group string, set map[string]string, remove []string) error {
	_, err := call(ctx, s, opAlterGroupConfigs, alterGroupConfigsRequest{Group: group, Set: set, Remove: remove})
	return err
}

type alterGroupConfigsRequest struct {
	Group  string            `json:"group"`
	Set    map[string]string `json:"set,omitempty"`
	Remove []string          `json:"remove,omitempty"`
}

var opAlterGroupConfigs = defineOp("AlterGroupConfigs", nil,
	func(s *Store, ctx context.Context, r alterGroupConfigsRequest) (none, error) {
		if r.Group == "" {
			return none{}, fmt.Errorf("alter group configs: %w: empty group id", ErrInvalidConfig)
		}
		_, err := s.propose(ctx, recGroupConfigChange, &groupConfigChangeRecord{
			Group:  r.Group,
			Set:    r.Set,
			Remove: slices.Sorted(slices.Values(r.Remove)),
		})
		if err != nil {
			return none{}, fmt.Errorf("alter configs of group %q: %w", r.Group, err)
		}
		return none{}, nil
	})
