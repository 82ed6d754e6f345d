package purgatory

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Operation is a delayed operation. It is completed at most once: either by
// TryComplete returning true (it did its completion work itself) or by
// expiry (OnExpire called). See the package documentation for the
// guarantees and for which goroutine calls each method.
type Operation interface {
	// TryComplete completes the operation if it can, and reports whether
	// it did. It is never run concurrently for one operation, and never
	// again once it has returned true or the operation has expired.
	TryComplete() bool
	// OnExpire is called once if the deadline passes, or the purgatory is
	// closed, before TryComplete returned true.
	OnExpire()
}

const numShards = 32 // power of two

// Purgatory holds operations waiting for keys of type K. The zero value is
// not usable; call New. All methods are safe for concurrent use.
type Purgatory[K comparable] struct {
	name    string
	seed    maphash.Seed
	closed  atomic.Bool
	waiting atomic.Int64
	checks  atomic.Uint64 // Check calls so far
	shards  [numShards]shard[K]
}

type shard[K comparable] struct {
	mu struct {
		sync.Mutex
		lists map[K]*watchList[K]
	}
}

// watchList is the operations watching one key, oldest first, as an
// intrusive doubly linked list so that removal is O(1).
type watchList[K comparable] struct {
	head, tail *node[K]
	n          int
}

// node is one (operation, key) pair, linked into the key's watchList.
type node[K comparable] struct {
	e          *entry[K]
	key        K
	shard      *shard[K]
	list       *watchList[K] // nil once removed
	prev, next *node[K]
}

// entry is one waiting operation.
type entry[K comparable] struct {
	op Operation

	// mu is held while TryComplete runs and while the operation's fate is
	// decided. done (guarded by mu) records that it has completed or
	// expired; completed mirrors it for lock-free reads.
	mu        sync.Mutex
	done      bool
	timer     *time.Timer // set under mu
	completed atomic.Bool
	// pending is set by a Check that found mu held: the holder tries again.
	pending atomic.Bool

	watch struct {
		sync.Mutex
		removed bool // no more nodes may be added
		nodes   []*node[K]
	}
}

// New returns an empty purgatory. name identifies it in logs and metrics.
// It starts no goroutines.
func New[K comparable](name string) *Purgatory[K] {
	p := &Purgatory[K]{name: name, seed: maphash.MakeSeed()}
	for i := range p.shards {
		p.shards[i].mu.lists = make(map[K]*watchList[K])
	}
	return p
}

// Name returns the name given to New.
func (p *Purgatory[K]) Name() string { return p.name }

func (p *Purgatory[K]) shardFor(key K) *shard[K] {
	return &p.shards[maphash.Comparable(p.seed, key)&(numShards-1)]
}

// TryCompleteElseWatch calls op.TryComplete once and returns true if it
// completed. Otherwise it watches op under every key until a Check of one
// of them completes it or deadline passes (then op.OnExpire is called), and
// tries once more after watching, so that a Check racing with this call is
// not lost. It returns true if op completed during this call.
//
// After Close, an op that does not complete at once expires at once.
// It panics if no key is given: such an op could never be checked.
func (p *Purgatory[K]) TryCompleteElseWatch(op Operation, deadline time.Time, keys ...K) bool {
	if len(keys) == 0 {
		panic("purgatory: TryCompleteElseWatch with no keys")
	}
	if op.TryComplete() {
		return true
	}
	e := &entry[K]{op: op}
	p.waiting.Add(1)
	if p.closed.Load() {
		p.expire(e)
		return false
	}
	e.mu.Lock()
	e.timer = time.AfterFunc(time.Until(deadline), func() { p.expire(e) })
	e.mu.Unlock()
	for _, k := range keys {
		if !p.watch(e, k) {
			break // already completed or expired
		}
	}
	// Close may have collected the waiting ops before we were watched.
	if p.closed.Load() {
		p.expire(e)
		return false
	}
	return p.maybeTryComplete(e)
}

// watch adds e to key's list, unless e has already been removed from its
// lists (completed or expired meanwhile). It reports whether it added.
func (p *Purgatory[K]) watch(e *entry[K], key K) bool {
	s := p.shardFor(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e.watch.Lock()
	defer e.watch.Unlock()
	if e.watch.removed {
		return false
	}
	l := s.mu.lists[key]
	if l == nil {
		l = &watchList[K]{}
		s.mu.lists[key] = l
	}
	n := &node[K]{e: e, key: key, shard: s, list: l, prev: l.tail}
	if l.tail != nil {
		l.tail.next = n
	} else {
		l.head = n
	}
	l.tail = n
	l.n++
	e.watch.nodes = append(e.watch.nodes, n)
	return true
}

// unwatch removes e from every key's list, deleting lists left empty.
func (p *Purgatory[K]) unwatch(e *entry[K]) {
	e.watch.Lock()
	e.watch.removed = true
	nodes := e.watch.nodes
	e.watch.nodes = nil
	e.watch.Unlock()
	for _, n := range nodes {
		s := n.shard
		s.mu.Lock()
		if l := n.list; l != nil {
			if n.prev != nil {
				n.prev.next = n.next
			} else {
				l.head = n.next
			}
			if n.next != nil {
				n.next.prev = n.prev
			} else {
				l.tail = n.prev
			}
			n.prev, n.next, n.list = nil, nil, nil
			l.n--
			if l.n == 0 && s.mu.lists[n.key] == l {
				delete(s.mu.lists, n.key)
			}
		}
		s.mu.Unlock()
	}
}

// finish releases what a completed or expired e holds. The caller is the
// one goroutine that set e.done.
func (p *Purgatory[K]) finish(e *entry[K]) {
	if e.timer != nil {
		e.timer.Stop()
	}
	p.unwatch(e)
	p.waiting.Add(-1)
}

// maybeTryComplete runs TryComplete unless e is done or another goroutine
// is running it; in the latter case that goroutine is made to try again.
// It reports whether this call completed e.
func (p *Purgatory[K]) maybeTryComplete(e *entry[K]) bool {
	for !e.completed.Load() {
		if !e.mu.TryLock() {
			// Someone holds mu. If pending was already set, the holder has
			// yet to look at it and will retry. Otherwise we just set it,
			// but the holder may have looked already and left: loop.
			if e.pending.Swap(true) {
				return false
			}
			continue
		}
		e.pending.Store(false)
		completed := false
		if !e.done && e.op.TryComplete() {
			e.done = true
			e.completed.Store(true)
			completed = true
		}
		done := e.done
		e.mu.Unlock()
		if completed {
			p.finish(e)
			return true
		}
		if done || !e.pending.Load() {
			return false
		}
	}
	return false
}

// expire calls OnExpire unless e is already done. It waits for a
// TryComplete in progress. OnExpire runs under e.mu and before e leaves
// its watch lists, so a Close that finds e still watched waits for its
// OnExpire to return: when Close returns, every operation has ended.
func (p *Purgatory[K]) expire(e *entry[K]) {
	e.mu.Lock()
	if e.done {
		e.mu.Unlock()
		return
	}
	e.done = true
	e.completed.Store(true)
	e.op.OnExpire()
	e.mu.Unlock()
	p.finish(e)
}

// Check tries to complete every operation watching key, oldest first, and
// returns how many this call completed. Completed operations are removed
// from all their keys.
func (p *Purgatory[K]) Check(key K) int {
	p.checks.Add(1)
	s := p.shardFor(key)
	s.mu.Lock()
	l := s.mu.lists[key]
	if l == nil {
		s.mu.Unlock()
		return 0
	}
	ops := make([]*entry[K], 0, l.n)
	for n := l.head; n != nil; n = n.next {
		ops = append(ops, n.e)
	}
	s.mu.Unlock()
	completed := 0
	for _, e := range ops {
		if p.maybeTryComplete(e) {
			completed++
		}
	}
	return completed
}

// Checks returns how many times Check has been called, for any key. An
// operation that notes it before reading its state and finds it unchanged
// in TryComplete knows that no key changed since: it was woken by its
// own TryCompleteElseWatch, and need not look again.
func (p *Purgatory[K]) Checks() uint64 { return p.checks.Load() }

// Len returns the number of operations waiting.
func (p *Purgatory[K]) Len() int { return int(p.waiting.Load()) }

// Close expires every waiting operation (OnExpire, on this goroutine) and
// stops their timers. Operations added later that do not complete at once
// expire at once. Close may be called more than once.
func (p *Purgatory[K]) Close() {
	p.closed.Store(true)
	var ops []*entry[K]
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		for _, l := range s.mu.lists {
			for n := l.head; n != nil; n = n.next {
				ops = append(ops, n.e)
			}
		}
		s.mu.Unlock()
	}
	for _, e := range ops {
		p.expire(e)
	}
}

// watchedKeys returns how many keys have a list, and how many nodes the
// lists hold in all (for leak tests).
func (p *Purgatory[K]) watchedKeys() (keys, nodes int) {
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		keys += len(s.mu.lists)
		for _, l := range s.mu.lists {
			nodes += l.n
		}
		s.mu.Unlock()
	}
	return keys, nodes
}
