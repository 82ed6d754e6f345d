package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeApplied is a store whose Raft log holds unapplied entries until
// applyAll.
type fakeApplied struct {
	mu        sync.Mutex
	unapplied bool
	changed   chan struct{}
}

func (f *fakeApplied) Unapplied() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unapplied
}

func (f *fakeApplied) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeApplied) applyAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unapplied = false
	close(f.changed)
	f.changed = make(chan struct{})
}

func TestAwaitApplied(t *testing.T) {
	tests := []struct {
		name      string
		unapplied bool
		leadAfter bool // leadership arrives with the applied entries
		want      bool
	}{
		{"nothing unapplied: answer at once", false, true, false},
		{"leadership among the unapplied entries", true, true, true},
		{"unapplied entries that do not make it leader", true, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeApplied{unapplied: tc.unapplied, changed: make(chan struct{})}
			var leader, checked atomic.Bool
			leads := func() bool { checked.Store(true); return leader.Load() }
			done := make(chan bool, 1)
			go func() { done <- awaitApplied(context.Background(), f, leads) }()
			if tc.unapplied {
				// Still waiting while entries are unapplied and it does
				// not lead.
				select {
				case got := <-done:
					t.Fatalf("returned %v before the entries were applied", got)
				case <-time.After(50 * time.Millisecond):
				}
				leader.Store(tc.leadAfter)
				f.applyAll()
			}
			select {
			case got := <-done:
				if got != tc.want {
					t.Fatalf("awaitApplied = %v, want %v", got, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("awaitApplied did not return")
			}
			if !tc.unapplied && checked.Load() {
				t.Fatal("checked leadership with nothing unapplied")
			}
		})
	}
}

// Entries that stay unapplied (a cut-off node's uncommitted tail) hold a
// produce at most maxLeadershipWait, and the request's own context ends it
// sooner.
func TestAwaitAppliedBounded(t *testing.T) {
	f := &fakeApplied{unapplied: true, changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool, 1)
	go func() { done <- awaitApplied(ctx, f, func() bool { return false }) }()
	cancel()
	select {
	case got := <-done:
		if got {
			t.Fatal("awaitApplied = true without leadership")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("awaitApplied ignored its context")
	}
}
