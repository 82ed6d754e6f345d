package txn

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Key is the __transaction_state key of a transactional id (version 0).
func Key(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version = 0
	k.TransactionalID = id
	return k.AppendTo(nil)
}

// Value is m's __transaction_state value: version 0, as Kafka writes
// before transaction version 2, unless m has a previous producer id, which
// only version 1 holds (Kafka's TransactionLogValue tagged field
// PreviousProducerId): a coordinator that loads the state after a
// producer id rotation still recognises the producer's retry with its old
// id (KIP-360). NextProducerId and NextProducerEpoch stay unset (-1) and
// ClientTransactionVersion 0: kbroker runs transaction version 0/1, where
// the producer id is handed out when it is chosen, not at commit.
func Value(m *Metadata) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = 0
	if m.LastProducerID != NoProducerID {
		v.Version = 1
		v.PreviousProducerID = m.LastProducerID
	}
	v.ProducerID = m.ProducerID
	v.ProducerEpoch = m.ProducerEpoch
	v.TimeoutMillis = int32(m.Timeout / time.Millisecond)
	v.State = kmsg.TransactionState(m.State)
	byTopic := map[string]int{}
	for _, tp := range m.SortedPartitions() {
		i, ok := byTopic[tp.Topic]
		if !ok {
			t := kmsg.NewTxnMetadataValueTopic()
			t.Topic = tp.Topic
			i = len(v.Topics)
			byTopic[tp.Topic] = i
			v.Topics = append(v.Topics, t)
		}
		v.Topics[i].Partitions = append(v.Topics[i].Partitions, tp.Partition)
	}
	v.LastUpdateTimestamp = m.LastUpdate.UnixMilli()
	v.StartTimestamp = -1
	if !m.Start.IsZero() {
		v.StartTimestamp = m.Start.UnixMilli()
	}
	return v.AppendTo(nil)
}

// Decode reads a __transaction_state record: the transactional id and its
// metadata, nil for a tombstone (value nil).
func Decode(key, value []byte) (string, *Metadata, error) {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", nil, fmt.Errorf("transaction state key: %w", err)
	}
	if k.Version != 0 {
		return "", nil, fmt.Errorf("transaction state key version %d", k.Version)
	}
	if value == nil {
		return k.TransactionalID, nil, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return "", nil, fmt.Errorf("transaction state value of %q: %w", k.TransactionalID, err)
	}
	if v.Version > 1 {
		return "", nil, fmt.Errorf("transaction state value version %d of %q", v.Version, k.TransactionalID)
	}
	m := &Metadata{
		TransactionalID: k.TransactionalID,
		ProducerID:      v.ProducerID, ProducerEpoch: v.ProducerEpoch,
		LastProducerID: NoProducerID, LastProducerEpoch: NoEpoch,
		Timeout:    time.Duration(v.TimeoutMillis) * time.Millisecond,
		State:      State(v.State),
		Partitions: map[TopicPartition]struct{}{},
		LastUpdate: time.UnixMilli(v.LastUpdateTimestamp),
	}
	if v.Version >= 1 && v.PreviousProducerID >= 0 {
		m.LastProducerID = v.PreviousProducerID
	}
	if v.StartTimestamp >= 0 {
		m.Start = time.UnixMilli(v.StartTimestamp)
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.Partitions[TopicPartition{t.Topic, p}] = struct{}{}
		}
	}
	return k.TransactionalID, m, nil
}
