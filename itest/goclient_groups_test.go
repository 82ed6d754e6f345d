package itest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"

	"github.com/kbroker/kbroker/internal/testutil"
)

// saramaHandler records every message of a group session and marks it.
type saramaHandler struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.mu.Lock()
		h.seen[string(m.Value)] = true
		h.mu.Unlock()
		s.MarkMessage(m, "")
	}
	return nil
}

func (h *saramaHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

// sarama's and kafka-go's consumer groups join, consume every record and
// commit their offsets.
func TestGoClientGroups(t *testing.T) {
	b := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")

	t.Run("sarama", func(t *testing.T) {
		topic := topicName(t)
		createTopic(t, b, topic, 3, nil)
		values := numberedValues("s", 300)
		produceValues(t, []string{b.addr}, topic, values)
		cfg := sarama.NewConfig()
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
		g, err := sarama.NewConsumerGroup([]string{b.addr}, "sarama-group", cfg)
		if err != nil {
			t.Fatal(err)
		}
		h := &saramaHandler{seen: map[string]bool{}}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			for ctx.Err() == nil {
				if err := g.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		testutil.Eventually(t, 60*time.Second, func() error {
			if n := h.count(); n < len(values) {
				return fmt.Errorf("consumed %d of %d", n, len(values))
			}
			return nil
		}, "sarama group consuming every record")
		waitCommitted(t, b, "sarama-group", topic, int64(len(values)))
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("sarama consume: %v", err)
		}
		g.Close()
	})

	t.Run("kafka-go", func(t *testing.T) {
		topic := topicName(t)
		createTopic(t, b, topic, 3, nil)
		values := numberedValues("k", 300)
		produceValues(t, []string{b.addr}, topic, values)
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.addr}, GroupID: "kafka-go-group", Topic: topic,
			StartOffset: kafka.FirstOffset, CommitInterval: 0, MaxWait: 500 * time.Millisecond})
		defer r.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		seen := map[string]bool{}
		for len(seen) < len(values) {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatalf("kafka-go group consumed %d of %d: %v", len(seen), len(values), err)
			}
			seen[string(m.Value)] = true
			if err := r.CommitMessages(ctx, m); err != nil {
				t.Fatalf("commit: %v", err)
			}
		}
		waitCommitted(t, b, "kafka-go-group", topic, int64(len(values)))
	})
}

// waitCommitted polls until group's committed offsets on topic add up to
// total.
func waitCommitted(t *testing.T, b *broker, group, topic string, total int64) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, func() error {
		got := committed(t, []string{b.addr}, group, topic)
		sum := int64(0)
		for _, o := range got {
			sum += o
		}
		if sum != total {
			return fmt.Errorf("committed %v, %d of %d records", got, sum, total)
		}
		return nil
	}, "group %s committing everything", group)
}
