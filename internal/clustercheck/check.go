package clustercheck

import (
	"fmt"
	"sort"
	"sync"
)

// Pos is a partition and offset.
type Pos struct {
	Partition int32
	Offset    int64
}

func (p Pos) String() string { return fmt.Sprintf("p%d@%d", p.Partition, p.Offset) }

// Record is one record read back.
type Record struct {
	Partition int32
	Offset    int64
	Value     string
}

// Acks is the history of acknowledged writes: the value each
// (partition, offset) was acknowledged with. Safe for concurrent use.
type Acks struct {
	mu        sync.Mutex
	vals      map[Pos]string
	conflicts []string
	failed    int
}

// NewAcks returns an empty history.
func NewAcks() *Acks { return &Acks{vals: map[Pos]string{}} }

// Ack records that value v was acknowledged at partition p, offset o.
func (a *Acks) Ack(p int32, o int64, v string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := Pos{p, o}
	if old, ok := a.vals[k]; ok && old != v {
		a.conflicts = append(a.conflicts, fmt.Sprintf("%v acknowledged as %q and as %q", k, old, v))
	}
	a.vals[k] = v
}

// Fail records a send that ended in an error (not acknowledged).
func (a *Acks) Fail() {
	a.mu.Lock()
	a.failed++
	a.mu.Unlock()
}

// Count is the number of acknowledged offsets.
func (a *Acks) Count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.vals)
}

// Failed is the number of sends recorded with Fail.
func (a *Acks) Failed() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failed
}

// Values returns every acknowledged value.
func (a *Acks) Values() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.vals))
	for _, v := range a.vals {
		out = append(out, v)
	}
	return out
}

// Result is Check's verdict. Each slice holds one line per problem.
type Result struct {
	Acked, Failed, Read int
	// Lost: acknowledged, and the value is nowhere in the final read.
	Lost []string
	// Misplaced: acknowledged at an offset that holds something else (or
	// nothing) while the value is at another offset.
	Misplaced []string
	// Duplicated: a value read at more than one offset. A violation for
	// idempotent producers; a non-idempotent retry may legitimately
	// write a value twice, so the caller decides.
	Duplicated []string
	// Gaps: a partition's offsets do not run 0, 1, 2, ... up to its end.
	Gaps []string
	// Conflicts: one offset acknowledged with two values.
	Conflicts []string
}

// Violations is every problem except Duplicated.
func (r Result) Violations() []string {
	var out []string
	for _, s := range [][]string{r.Conflicts, r.Gaps, r.Lost, r.Misplaced} {
		out = append(out, s...)
	}
	return out
}

// Check compares the acknowledged history with a final read of every
// partition (records in offset order). ends, when not nil, are the end
// offsets the read was meant to reach: a partition must hold exactly
// offsets 0..end-1.
func Check(a *Acks, final map[int32][]Record, ends map[int32]int64) Result {
	var r Result
	at := map[Pos]string{}
	where := map[string][]Pos{}
	for _, p := range sortedKeys(final) {
		rs := final[p]
		r.Read += len(rs)
		for i, rec := range rs {
			if rec.Offset != int64(i) && len(r.Gaps) < maxLines {
				r.Gaps = append(r.Gaps, fmt.Sprintf("p%d: record #%d has offset %d (offsets must run 0, 1, 2, ... without gaps or repeats)", p, i, rec.Offset))
			}
			k := Pos{rec.Partition, rec.Offset}
			at[k] = rec.Value
			where[rec.Value] = append(where[rec.Value], k)
		}
	}
	for _, p := range sortedKeys(ends) {
		if n := int64(len(final[p])); n != ends[p] {
			r.Gaps = append(r.Gaps, fmt.Sprintf("p%d: final read has %d records for end offset %d", p, n, ends[p]))
		}
	}
	for v, ks := range where {
		if len(ks) > 1 {
			sortPos(ks)
			r.Duplicated = append(r.Duplicated, fmt.Sprintf("%q at %v", v, ks))
		}
	}
	sort.Strings(r.Duplicated)

	a.mu.Lock()
	defer a.mu.Unlock()
	r.Acked, r.Failed = len(a.vals), a.failed
	r.Conflicts = append(r.Conflicts, a.conflicts...)
	keys := make([]Pos, 0, len(a.vals))
	for k := range a.vals {
		keys = append(keys, k)
	}
	sortPos(keys)
	for _, k := range keys {
		want := a.vals[k]
		got, ok := at[k]
		if ok && got == want {
			continue
		}
		here := "nothing"
		if ok {
			here = fmt.Sprintf("%q", got)
		}
		if elsewhere := where[want]; len(elsewhere) > 0 {
			r.Misplaced = append(r.Misplaced, fmt.Sprintf("%q acknowledged at %v, read at %v (%v holds %s)", want, k, elsewhere, k, here))
		} else {
			r.Lost = append(r.Lost, fmt.Sprintf("%q acknowledged at %v, not in the final read (%v holds %s)", want, k, k, here))
		}
	}
	return r
}

// maxLines bounds the gap lines per check: one broken partition would
// otherwise repeat the same finding for every later record.
const maxLines = 100

func sortPos(ks []Pos) {
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].Partition != ks[j].Partition {
			return ks[i].Partition < ks[j].Partition
		}
		return ks[i].Offset < ks[j].Offset
	})
}

func sortedKeys[V any](m map[int32]V) []int32 {
	ks := make([]int32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}
