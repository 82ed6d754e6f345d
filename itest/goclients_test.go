package itest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
)

func TestSarama(t *testing.T) {
	t.Parallel()
	n := pick(200, 500)
	b := startBroker(t, t.TempDir())

	for _, tc := range []struct {
		name    string
		version sarama.KafkaVersion
	}{
		{"default-" + sarama.DefaultVersion.String(), sarama.DefaultVersion},
		{"max-" + sarama.MaxVersion.String(), sarama.MaxVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := topicName(t)
			createTopic(t, b, topic, 3, nil)
			cfg := sarama.NewConfig()
			cfg.Version = tc.version
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Return.Successes = true
			cfg.Consumer.Return.Errors = true

			prod, err := sarama.NewSyncProducer([]string{b.addr}, cfg)
			if err != nil {
				t.Fatalf("sarama.NewSyncProducer: %v", err)
			}
			defer prod.Close()
			a := newAcks()
			for i := 0; i < n; i++ {
				v := fmt.Sprintf("sa-%05d", i)
				p, o, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(v)})
				if err != nil {
					t.Fatalf("SendMessage %d: %v", i, err)
				}
				a.Ack(p, o, v)
			}

			cons, err := sarama.NewConsumer([]string{b.addr}, cfg)
			if err != nil {
				t.Fatalf("sarama.NewConsumer: %v", err)
			}
			defer cons.Close()
			ends := endOffsets(t, b, topic)
			got := make(map[int32][]rec)
			for p, end := range ends {
				if end == 0 {
					continue
				}
				pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
				if err != nil {
					t.Fatalf("ConsumePartition p%d: %v", p, err)
				}
				timeout := time.After(30 * time.Second)
			read:
				for {
					select {
					case m := <-pc.Messages():
						got[p] = append(got[p], rec{Partition: m.Partition, Offset: m.Offset, Value: string(m.Value)})
						if m.Offset >= end-1 {
							break read
						}
					case err := <-pc.Errors():
						t.Fatalf("sarama consume p%d: %v", p, err)
					case <-timeout:
						t.Fatalf("sarama consume p%d: timed out after %d records, end offset %d", p, len(got[p]), end)
					}
				}
				pc.Close()
			}
			checkLog(t, a, got)
			checkLog(t, a, consumeAll(t, b, topic))
		})
	}
}

func TestKafkaGo(t *testing.T) {
	t.Parallel()
	n := pick(200, 500)
	b := startBroker(t, t.TempDir())
	topic := topicName(t)
	createTopic(t, b, topic, 3, nil)

	a := newAcks()
	w := &kafka.Writer{
		Addr:         kafka.TCP(b.addr),
		Topic:        topic,
		RequiredAcks: kafka.RequireAll,
		Completion: func(msgs []kafka.Message, err error) {
			for _, m := range msgs {
				if err != nil {
					a.Fail()
					continue
				}
				a.Ack(int32(m.Partition), m.Offset, string(m.Value))
			}
		},
	}
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Value: []byte(fmt.Sprintf("kg-%05d", i))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("kafka-go WriteMessages: %v", err)
	}
	if err := w.Close(); err != nil { // waits for Completion calls
		t.Fatalf("kafka-go Writer.Close: %v", err)
	}
	if a.Count() != n {
		t.Errorf("%d messages acknowledged, want %d", a.Count(), n)
	}

	ends := endOffsets(t, b, topic)
	got := make(map[int32][]rec)
	for p, end := range ends {
		if end == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:   []string{b.addr},
			Topic:     topic,
			Partition: int(p),
			MaxWait:   500 * time.Millisecond,
		})
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					err = fmt.Errorf("%w after %d records, end offset %d", err, len(got[p]), end)
				}
				r.Close()
				t.Fatalf("kafka-go read p%d: %v", p, err)
			}
			got[p] = append(got[p], rec{Partition: int32(m.Partition), Offset: m.Offset, Value: string(m.Value)})
			if m.Offset >= end-1 {
				break
			}
		}
		r.Close()
	}
	checkLog(t, a, got)
	checkLog(t, a, consumeAll(t, b, topic))
}
