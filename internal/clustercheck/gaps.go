package clustercheck

import (
	"sort"
	"sync"
	"time"
)

// Ack is one acknowledgement as a producer saw it: when its callback ran
// and for which partition.
type Ack struct {
	Partition int32
	At        time.Time
}

// AckTimes collects acknowledgement times. Safe for concurrent use.
type AckTimes struct {
	mu   sync.Mutex
	acks []Ack
}

// Add records an acknowledgement for partition p at time at.
func (a *AckTimes) Add(p int32, at time.Time) {
	a.mu.Lock()
	a.acks = append(a.acks, Ack{p, at})
	a.mu.Unlock()
}

// Snapshot returns the acknowledgements recorded so far.
func (a *AckTimes) Snapshot() []Ack {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Ack(nil), a.acks...)
}

// Fault is a fault (or any event) a gap can be attributed to.
type Fault struct {
	Kind  string
	Start time.Time
}

// Gap is a stretch without acknowledgements on one partition.
type Gap struct {
	Kind      string // the fault it is attributed to; "" before any fault
	Partition int32
	From, To  time.Time // the acknowledgements around it
}

// Duration is To - From.
func (g Gap) Duration() time.Duration { return g.To.Sub(g.From) }

// LongestGaps returns, per fault kind, the longest gap between two
// successive acknowledgements of one partition, as producers saw them.
// The last acknowledgement of each partition opens a final gap that runs
// to end (for a partition that never came back).
//
// A gap is attributed to the fault that started it: the earliest fault
// injected inside the gap (the one that cut the acknowledgements; the last
// ack before a fault usually precedes its injection by milliseconds), else
// the fault most recently injected before the gap began (still active, or
// its after-effects such as a leader moving back). Gaps before any fault
// are under kind "".
func LongestGaps(acks []Ack, faults []Fault, end time.Time) map[string]Gap {
	fs := append([]Fault(nil), faults...)
	sort.Slice(fs, func(i, j int) bool { return fs[i].Start.Before(fs[j].Start) })
	byPart := map[int32][]time.Time{}
	for _, a := range acks {
		byPart[a.Partition] = append(byPart[a.Partition], a.At)
	}
	out := map[string]Gap{}
	consider := func(p int32, from, to time.Time) {
		if !to.After(from) {
			return
		}
		g := Gap{Kind: attribute(fs, from, to), Partition: p, From: from, To: to}
		if old, ok := out[g.Kind]; !ok || g.Duration() > old.Duration() {
			out[g.Kind] = g
		}
	}
	for p, ts := range byPart {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		for i := 1; i < len(ts); i++ {
			consider(p, ts[i-1], ts[i])
		}
		consider(p, ts[len(ts)-1], end)
	}
	return out
}

// attribute names the fault that started the gap (from, to); fs is sorted
// by start.
func attribute(fs []Fault, from, to time.Time) string {
	// The first fault injected after from.
	i := sort.Search(len(fs), func(i int) bool { return fs[i].Start.After(from) })
	if i < len(fs) && fs[i].Start.Before(to) {
		return fs[i].Kind
	}
	if i > 0 {
		return fs[i-1].Kind
	}
	return ""
}
