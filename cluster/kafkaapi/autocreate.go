package kafkaapi

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/kbroker/kbroker/metadata"
)

// autoCreator is Kafka's AutoTopicCreationManager: Metadata hands it the
// topics to auto-create and answers without waiting; RunAutoCreate sends
// them to the controller. A topic already in flight is not sent again
// (Kafka's inflightTopics).
type autoCreator struct {
	queue chan []metadata.TopicSpec

	mu       sync.Mutex
	inflight map[string]bool
}

// autoCreateQueue bounds the batches waiting for the controller; past it
// a request's topics are dropped and its client asks again.
const autoCreateQueue = 256

func newAutoCreator() *autoCreator {
	return &autoCreator{queue: make(chan []metadata.TopicSpec, autoCreateQueue), inflight: map[string]bool{}}
}

// submit queues the specs not already in flight. It never blocks.
func (a *autoCreator) submit(specs []metadata.TopicSpec) {
	if len(specs) == 0 {
		return
	}
	a.mu.Lock()
	var todo []metadata.TopicSpec
	for _, s := range specs {
		if !a.inflight[s.Name] {
			a.inflight[s.Name] = true
			todo = append(todo, s)
		}
	}
	a.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	select {
	case a.queue <- todo:
	default:
		a.done(todo)
	}
}

// done clears specs from the in-flight set.
func (a *autoCreator) done(specs []metadata.TopicSpec) {
	a.mu.Lock()
	for _, s := range specs {
		delete(a.inflight, s.Name)
	}
	a.mu.Unlock()
}

// autoCreateTimeout bounds one batch's CreateTopics call (Kafka sends it
// with request.timeout.ms, 30 s by default).
const autoCreateTimeout = 30 * time.Second

// RunAutoCreate creates the topics Metadata requests asked to auto-create,
// one batch at a time, until ctx ends. The node runs it after Attach.
func (h *Handlers) RunAutoCreate(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case specs := <-h.autoCreator.queue:
			h.createQueued(ctx, specs)
		}
	}
}

func (h *Handlers) createQueued(ctx context.Context, specs []metadata.TopicSpec) {
	defer h.autoCreator.done(specs)
	ctx, cancel := context.WithTimeout(ctx, autoCreateTimeout)
	defer cancel()
	created := false
	for i, err := range h.store.CreateTopics(ctx, specs, false) {
		switch {
		case err == nil:
			created = true
			h.logger.Info("auto-created topic", "topic", specs[i].Name)
		case errors.Is(err, metadata.ErrTopicExists):
		default:
			h.logger.Warn("auto-creating topic failed", "topic", specs[i].Name, "err", err)
		}
	}
	if created {
		// Open the new partitions now rather than at the next image
		// change, so that the client's first produce finds them.
		if err := h.replicas.Apply(h.store.Image()); err != nil {
			h.logger.Warn("opening auto-created partitions", "err", err)
		}
	}
}
