package purgatory

import (
	"sync/atomic"
	"testing"
	"time"
)

type benchOp struct{ ready *atomic.Bool }

func (o benchOp) TryComplete() bool { return o.ready.Load() }
func (o benchOp) OnExpire()         {}

// BenchmarkWatchThenCheck: an op that waits, then is completed by a Check
// (the acks=all path: park, then the high watermark moves).
func BenchmarkWatchThenCheck(b *testing.B) {
	p := New[int]("bench")
	deadline := time.Now().Add(time.Hour)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ready := new(atomic.Bool)
		p.TryCompleteElseWatch(benchOp{ready}, deadline, i%64)
		ready.Store(true)
		if p.Check(i%64) != 1 {
			b.Fatal("not completed")
		}
	}
	if p.Len() != 0 {
		b.Fatal("ops left")
	}
}

// BenchmarkWatchThenCheckParallel: the same from many goroutines over
// distinct keys.
func BenchmarkWatchThenCheckParallel(b *testing.B) {
	p := New[int]("bench")
	deadline := time.Now().Add(time.Hour)
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := int(next.Add(1))
		for pb.Next() {
			ready := new(atomic.Bool)
			p.TryCompleteElseWatch(benchOp{ready}, deadline, key)
			ready.Store(true)
			p.Check(key)
		}
	})
}

// BenchmarkCompleteOnAdd: the fast path that never watches.
func BenchmarkCompleteOnAdd(b *testing.B) {
	p := New[int]("bench")
	ready := new(atomic.Bool)
	ready.Store(true)
	deadline := time.Now().Add(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		p.TryCompleteElseWatch(benchOp{ready}, deadline, 1)
	}
}
