package kafkaapi

import (
	"testing"

	"github.com/kbroker/kbroker/metadata"
)

// A topic in flight is not queued again (Kafka's inflightTopics) until
// its batch is done; a full queue drops a batch rather than block.
func TestAutoCreatorInflight(t *testing.T) {
	a := newAutoCreator()
	spec := func(names ...string) []metadata.TopicSpec {
		var out []metadata.TopicSpec
		for _, n := range names {
			out = append(out, metadata.TopicSpec{Name: n})
		}
		return out
	}
	a.submit(spec("a", "b"))
	a.submit(spec("b", "c"))
	if got := len(a.queue); got != 2 {
		t.Fatalf("%d batches queued, want 2", got)
	}
	first, second := <-a.queue, <-a.queue
	if len(first) != 2 || len(second) != 1 || second[0].Name != "c" {
		t.Fatalf("batches %v and %v, want [a b] and [c]", first, second)
	}
	a.done(first)
	a.submit(spec("a"))
	if got := len(a.queue); got != 1 {
		t.Fatalf("a done topic is not queued again: %d batches", got)
	}
	<-a.queue
	a.done(spec("a", "c"))

	for i := range autoCreateQueue {
		a.submit(spec(string(rune('A'+i%26)) + string(rune('0'+i/26))))
	}
	a.submit(spec("overflow"))
	a.mu.Lock()
	inflight := a.inflight["overflow"]
	a.mu.Unlock()
	if inflight {
		t.Errorf("a batch dropped on a full queue stays in flight")
	}
}
