package cluster

import (
	"context"
	"errors"
	"testing"
)

// fakeProducerIDBlocks hands out blocks of size ids, or fails.
type fakeProducerIDBlocks struct {
	next, size int64
	calls      int
	err        error
}

func (f *fakeProducerIDBlocks) AllocateProducerIDs(context.Context) (int64, int64, error) {
	f.calls++
	if f.err != nil {
		return 0, 0, f.err
	}
	first := f.next
	f.next += f.size + 10 // blocks need not be contiguous
	return first, f.size, nil
}

func TestProducerIDAllocatorUsesWholeBlocks(t *testing.T) {
	blocks := &fakeProducerIDBlocks{next: 1000, size: 2}
	a := producerIDAllocator{controller: blocks}
	var got []int64
	for range 5 {
		id, err := a.Allocate(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	want := []int64{1000, 1001, 1012, 1013, 1024}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ids %v, want %v", got, want)
		}
	}
	if blocks.calls != 3 {
		t.Fatalf("%d blocks asked for 5 ids of blocks of 2, want 3", blocks.calls)
	}

	// A failed allocation is returned and asked again next time.
	blocks.err = errors.New("no controller")
	// The last id of the block needs no controller.
	if id, err := a.Allocate(context.Background()); err != nil || id != 1025 {
		t.Fatalf("last id of the block: %d, %v; want 1025", id, err)
	}
	if _, err := a.Allocate(context.Background()); !errors.Is(err, blocks.err) {
		t.Fatalf("allocate without a controller: %v", err)
	}
	blocks.err = nil
	if id, err := a.Allocate(context.Background()); err != nil || id != 1036 {
		t.Fatalf("after the controller is back: %d %v", id, err)
	}
}
