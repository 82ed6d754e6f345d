package metadata

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Growing and shrinking the cluster: unregistering a broker that is gone
// for good (Kafka's UnregisterBroker, KIP-631), and the per-broker dynamic
// configs (Kafka's broker resource named by a broker id), which layer over
// the cluster-wide dynamic defaults (Image.ClusterConfigs) on that broker
// only.

// Record types of this file, far from the others so that types added
// meanwhile elsewhere cannot collide with them (the API keys of
// UnregisterBroker and IncrementalAlterConfigs).
const (
	recUnregisterBroker    recordType = 64
	recBrokerConfigChange  recordType = 44
	unregisterBrokerName   string     = "UnregisterBroker"
	brokerConfigChangeName string     = "BrokerConfigChange"
)

var (
	// ErrBrokerNotRegistered: unregistering a broker id the image does
	// not hold. Kafka: BROKER_ID_NOT_REGISTERED.
	ErrBrokerNotRegistered = errors.New("metadata: broker id not registered")
	// ErrBrokerAlive: unregistering a broker that is unfenced (it
	// heartbeats). Kafka's controller would unregister it; kbroker
	// refuses, so that a typo cannot take a serving broker out of the
	// cluster. Kafka: INVALID_REQUEST.
	ErrBrokerAlive = errors.New("metadata: broker is alive (unfenced)")
)

func init() {
	errorCodes = append(errorCodes,
		struct {
			code string
			err  error
		}{"BROKER_ID_NOT_REGISTERED", ErrBrokerNotRegistered},
		struct {
			code string
			err  error
		}{"BROKER_ALIVE", ErrBrokerAlive})
	recordNames[recUnregisterBroker] = unregisterBrokerName
	recordNames[recBrokerConfigChange] = brokerConfigChangeName
}

// unregisterBrokerRecord removes the registration of a fenced broker at
// its current epoch (Kafka's UnregisterBrokerRecord).
type unregisterBrokerRecord struct {
	BrokerID    int32 `json:"brokerId"`
	BrokerEpoch int64 `json:"brokerEpoch"`
}

// brokerConfigChangeRecord sets and removes per-broker dynamic configs of
// one broker id (Kafka's ConfigRecord on a BROKER resource named by the
// id). The broker need not be registered: its values wait for it, as
// Kafka's do.
type brokerConfigChangeRecord struct {
	BrokerID int32             `json:"brokerId"`
	Set      map[string]string `json:"set,omitempty"`
	Remove   []string          `json:"remove,omitempty"`
}

// applyUnregisterBroker removes a broker's registration. Only a fenced
// broker at its current epoch is removed (the FSM re-checks what the
// controller checked: a heartbeat may have unfenced it, or a new
// incarnation registered, in between). Partitions that list it as a
// replica keep it listed, as Kafka does; it is fenced, so it already
// leads nothing and is in no ISR but as a last member, and without a
// registration it is never alive again (decisions.ElectLeader, placement) until a
// process with its id registers anew.
func applyUnregisterBroker(img *Image, r *unregisterBrokerRecord) error {
	b, ok := img.Brokers[r.BrokerID]
	if !ok {
		return fmt.Errorf("%w: %d", ErrBrokerNotRegistered, r.BrokerID)
	}
	if b.Epoch != r.BrokerEpoch {
		return fmt.Errorf("%w: broker %d has epoch %d, record has %d", ErrStaleBrokerEpoch, r.BrokerID, b.Epoch, r.BrokerEpoch)
	}
	if !b.Fenced {
		return fmt.Errorf("%w: broker %d", ErrBrokerAlive, r.BrokerID)
	}
	img.Brokers = maps.Clone(img.Brokers)
	delete(img.Brokers, r.BrokerID)
	return nil
}

func applyBrokerConfigChange(img *Image, r *brokerConfigChangeRecord) error {
	if r.BrokerID < 0 {
		return fmt.Errorf("%w: broker id %d", ErrInvalidConfig, r.BrokerID)
	}
	c := maps.Clone(img.BrokerConfigs[r.BrokerID])
	if c == nil {
		c = map[string]string{}
	}
	for _, k := range r.Remove {
		delete(c, k)
	}
	maps.Copy(c, r.Set)
	all := maps.Clone(img.BrokerConfigs)
	if all == nil {
		all = map[int32]map[string]string{}
	}
	if len(c) == 0 {
		delete(all, r.BrokerID)
	} else {
		all[r.BrokerID] = c
	}
	img.BrokerConfigs = all
	return nil
}

// UnregisterBroker removes a broker's registration (Kafka's
// UnregisterBroker): it disappears from the image's brokers, so from
// Metadata and DescribeCluster answers, and placement no longer
// considers it. It must be fenced (stopped, or cut off for the session
// timeout): an unfenced broker fails with ErrBrokerAlive, an unknown id
// with ErrBrokerNotRegistered. A process that starts later with the id
// registers as a new broker.
func (s *Store) UnregisterBroker(ctx context.Context, id int32) error {
	_, err := call(ctx, s, opUnregisterBroker, id)
	return err
}

var opUnregisterBroker = defineOp(unregisterBrokerName, nil,
	func(s *Store, ctx context.Context, id int32) (none, error) {
		return none{}, s.unregisterBroker(ctx, id)
	})

func (s *Store) unregisterBroker(ctx context.Context, id int32) error {
	b, ok := s.Image().Brokers[id]
	if !ok {
		return fmt.Errorf("unregister broker: %w: %d", ErrBrokerNotRegistered, id)
	}
	if !b.Fenced {
		return fmt.Errorf("unregister broker: %w: broker %d is unfenced and heartbeating; stop it first", ErrBrokerAlive, id)
	}
	if _, err := s.propose(ctx, recUnregisterBroker, &unregisterBrokerRecord{BrokerID: id, BrokerEpoch: b.Epoch}); err != nil {
		return fmt.Errorf("unregister broker %d: %w", id, err)
	}
	return nil
}

// AlterBrokerConfigs sets and removes the per-broker dynamic configs of
// broker id (Kafka's broker resource named by the id), checked with
// Config.ValidateClusterConfig on the broker's merged per-broker values:
// the keys and values allowed are those of the cluster-wide defaults.
func (s *Store) AlterBrokerConfigs(ctx context.Context, id int32, set map[string]string, remove []string) error {
	_, err := call(ctx, s, opAlterBrokerConfigs, alterBrokerConfigsRequest{BrokerID: id, Set: set, Remove: remove})
	return err
}

type alterBrokerConfigsRequest struct {
	BrokerID int32             `json:"brokerId"`
	Set      map[string]string `json:"set,omitempty"`
	Remove   []string          `json:"remove,omitempty"`
}

var opAlterBrokerConfigs = defineOp("AlterBrokerConfigs", nil,
	func(s *Store, ctx context.Context, r alterBrokerConfigsRequest) (none, error) {
		return none{}, s.alterBrokerConfigs(ctx, r)
	})

func (s *Store) alterBrokerConfigs(ctx context.Context, r alterBrokerConfigsRequest) error {
	if r.BrokerID < 0 {
		return fmt.Errorf("alter configs of broker %d: %w: broker id must be >= 0", r.BrokerID, ErrInvalidConfig)
	}
	merged := maps.Clone(s.Image().BrokerConfigs[r.BrokerID])
	if merged == nil {
		merged = map[string]string{}
	}
	for _, k := range r.Remove {
		delete(merged, k)
	}
	maps.Copy(merged, r.Set)
	if v := s.cfg.ValidateClusterConfig; v != nil {
		if err := v(merged); err != nil {
			return fmt.Errorf("alter configs of broker %d: %w: %w", r.BrokerID, ErrInvalidConfig, err)
		}
	}
	_, err := s.propose(ctx, recBrokerConfigChange, &brokerConfigChangeRecord{
		BrokerID: r.BrokerID,
		Set:      r.Set,
		Remove:   slices.Sorted(slices.Values(r.Remove)),
	})
	if err != nil {
		return fmt.Errorf("alter configs of broker %d: %w", r.BrokerID, err)
	}
	return nil
}

// DynamicBrokerConfigs returns the dynamic broker values in effect on
// broker id: the cluster-wide defaults with the broker's own values over
// them (Kafka's DYNAMIC_BROKER_CONFIG before DYNAMIC_DEFAULT_BROKER_CONFIG).
// The result must not be modified when it is one of the image's maps.
func (i *Image) DynamicBrokerConfigs(id int32) map[string]string {
	own := i.BrokerConfigs[id]
	if len(own) == 0 {
		return i.ClusterConfigs
	}
	m := maps.Clone(i.ClusterConfigs)
	if m == nil {
		m = make(map[string]string, len(own))
	}
	maps.Copy(m, own)
	return m
}
