package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/wire/record"
)

// lastOffsetIn returns the last offset of the last whole batch in log.
func lastOffsetIn(log []byte) int64 {
	last := int64(-1)
	for len(log) > 0 {
		b, next, err := record.Parse(log)
		if err != nil {
			break
		}
		last = b.LastOffset()
		log = next
	}
	return last
}

// endOffsets lists the high watermark of every partition of topic.
func endOffsets(ctx context.Context, seeds []string, topic string) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTimeout(2*time.Second), kgo.RetryTimeout(15*time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	lo, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	ends := map[int32]int64{}
	var errs []string
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			errs = append(errs, fmt.Sprintf("p%d: %v", o.Partition, o.Err))
		}
		ends[o.Partition] = o.Offset
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("ListEndOffsets: %s", strings.Join(errs, "; "))
	}
	return ends, nil
}

// finalRead reads every partition from offset 0 to its end offset.
func finalRead(seeds []string, topic string, ends map[int32]int64) (map[int32][]po, map[po]string, error) {
	offs := map[int32]kgo.Offset{}
	remaining := map[int32]bool{}
	for p, e := range ends {
		if e > 0 {
			offs[p] = kgo.NewOffset().At(0)
			remaining[p] = true
		}
	}
	got := map[int32][]po{}
	vals := map[po]string{}
	if len(remaining) == 0 {
		return got, vals, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTimeout(2*time.Second),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}))
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for polls := 0; len(remaining) > 0 && polls < 100000 && ctx.Err() == nil; polls++ {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= ends[r.Partition] {
				return
			}
			k := po{r.Partition, r.Offset}
			got[r.Partition] = append(got[r.Partition], k)
			vals[k] = string(r.Value)
			if r.Offset == ends[r.Partition]-1 {
				delete(remaining, r.Partition)
			}
		})
	}
	if len(remaining) > 0 {
		return got, vals, fmt.Errorf("final read: %d partitions short of their end offsets %v", len(remaining), ends)
	}
	return got, vals, nil
}

// report is the checker's verdict.
type report struct {
	target, seed, took string
	producers          int
	ops, ok, fail, ind int
	faultCount         map[string]int
	faultFailed        map[string]int
	unavail            map[string]time.Duration // whole topic
	unavailPart        map[string]time.Duration // worst partition
	skipped            map[string]string
	lost, dup, incons  int
	problems           []string // other violations
	examples           []string
	notes              []string
	group              string
	consumerSessions   int
	reReads            int
	readCount          int
	finalRecords       int
	failedPresent      int
	history            string
}

func (r *report) violations() int { return r.lost + r.dup + r.incons + len(r.problems) }

func (r *report) example(format string, args ...any) {
	if len(r.examples) < 25 {
		r.examples = append(r.examples, fmt.Sprintf(format, args...))
	}
}

// check compares the history, every read and the final read.
func (r *report) check(sends []event, rd *reads, final map[int32][]po, finalVals map[po]string, ends map[int32]int64) {
	acked := map[po]string{}
	for _, s := range sends {
		r.ops++
		switch s.Outcome {
		case outOK:
			r.ok++
			k := po{s.Partition, s.Offset}
			if old, ok := acked[k]; ok && old != s.Value {
				r.incons++
				r.example("p%d@%d acknowledged as both %q and %q", k.p, k.o, old, s.Value)
			}
			acked[k] = s.Value
			if v, ok := finalVals[k]; !ok || v != s.Value {
				r.lost++
				if !ok {
					r.example("lost: %q acknowledged at p%d@%d, not in the final read (end offset %d)", s.Value, k.p, k.o, ends[k.p])
				} else {
					r.example("lost: %q acknowledged at p%d@%d, final read has %q there", s.Value, k.p, k.o, v)
				}
			}
		case outFail:
			r.fail++
		default:
			r.ind++
		}
	}
	// Offsets contiguous: 0..end-1 exactly once.
	for p, end := range ends {
		rs := final[p]
		if int64(len(rs)) != end {
			r.incons++
			r.example("p%d: final read has %d records for end offset %d", p, len(rs), end)
		}
		for i, k := range rs {
			if k.o != int64(i) {
				r.incons++
				r.example("p%d: record #%d has offset %d (offsets must be contiguous)", p, i, k.o)
				break
			}
		}
	}
	rd.mu.Lock()
	defer rd.mu.Unlock()
	r.readCount = rd.count
	for _, c := range rd.conflicts {
		r.incons++
		r.example("inconsistent read: %s", c)
	}
	for _, c := range rd.order {
		r.incons++
		r.example("offsets not increasing: %s", c)
	}
	failed := map[string]bool{}
	for _, s := range sends {
		if s.Outcome == outFail {
			failed[s.Value] = true
		}
	}
	for v, where := range rd.where {
		if len(where) > 1 {
			r.dup++
			var ks []string
			for k := range where {
				ks = append(ks, fmt.Sprintf("p%d@%d", k.p, k.o))
			}
			sort.Strings(ks)
			r.example("duplicate: %q at %s", v, strings.Join(ks, ", "))
		}
		if failed[v] {
			r.failedPresent++
		}
	}
	for _, rs := range final {
		r.finalRecords += len(rs)
	}
}

// unavailability is, per fault type, the longest gap between
// acknowledgements that overlaps a fault of that type: for the topic as a
// whole (any partition acknowledging) and for the worst single partition.
func unavailability(sends []event, faults []fault, runEnd time.Time) (topic, part map[string]time.Duration) {
	var all []time.Time
	byPart := map[int32][]time.Time{}
	for _, s := range sends {
		if s.Outcome == outOK {
			all = append(all, s.Time)
			byPart[s.Partition] = append(byPart[s.Partition], s.Time)
		}
	}
	sortTimes(all)
	for _, ts := range byPart {
		sortTimes(ts)
	}
	topic, part = map[string]time.Duration{}, map[string]time.Duration{}
	for _, f := range faults {
		end := f.End
		if end.IsZero() {
			end = runEnd
		}
		topic[f.Kind] = max(topic[f.Kind], longestGap(all, f.Start, end, runEnd))
		for _, ts := range byPart {
			part[f.Kind] = max(part[f.Kind], longestGap(ts, f.Start, end, runEnd))
		}
	}
	return topic, part
}

func sortTimes(ts []time.Time) {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
}

// longestGap is the longest interval between consecutive acks (sorted)
// that overlaps [start, end]; the last ack's gap runs to runEnd.
func longestGap(acks []time.Time, start, end, runEnd time.Time) time.Duration {
	i := sort.Search(len(acks), func(i int) bool { return acks[i].After(start) }) - 1
	longest := time.Duration(0)
	for n := 0; i < len(acks) && n <= len(acks); i, n = i+1, n+1 {
		from := start
		if i >= 0 {
			from = acks[i]
		}
		if !from.Before(end) {
			break
		}
		to := runEnd
		if i+1 < len(acks) {
			to = acks[i+1]
		}
		longest = max(longest, to.Sub(from))
	}
	return longest
}

func (r *report) print(w io.Writer) {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(&b, "\n=== kbroker chaos summary: target %s, seed %s, %s, %d producers ===\n", r.target, r.seed, r.took, r.producers)
	fmt.Fprintf(tw, "operations\t%d\n", r.ops)
	fmt.Fprintf(tw, "  ok\t%d\n", r.ok)
	fmt.Fprintf(tw, "  failed (definite)\t%d\n", r.fail)
	fmt.Fprintf(tw, "  indefinite\t%d\n", r.ind)
	fmt.Fprintf(tw, "records read (consumers + final)\t%d\n", r.readCount)
	fmt.Fprintf(tw, "final read records\t%d\n", r.finalRecords)
	fmt.Fprintf(tw, "assignment consumer sessions\t%d (%d records re-delivered below a session's start offset)\n", r.consumerSessions, r.reReads)
	fmt.Fprintf(tw, "group consumer\t%s\n", r.group)
	tw.Flush()
	fmt.Fprintf(&b, "\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "fault\tinjected\tfault errors\tlongest unavailability: topic\tone partition\n")
	total := 0
	var skippedNotes []string
	for _, k := range allNemeses {
		if why, ok := r.skipped[k]; ok {
			fmt.Fprintf(tw, "%s\t-\t-\tskipped\t\n", k)
			skippedNotes = append(skippedNotes, fmt.Sprintf("%s skipped: %s", k, why))
			continue
		}
		total += r.faultCount[k]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%v\n", k, r.faultCount[k], r.faultFailed[k],
			r.unavail[k].Round(time.Millisecond), r.unavailPart[k].Round(time.Millisecond))
	}
	fmt.Fprintf(tw, "total\t%d\t\t\t\n", total)
	tw.Flush()
	fmt.Fprintf(&b, "\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "lost (acknowledged, not read back at its offset)\t%d\n", r.lost)
	fmt.Fprintf(tw, "duplicated (a value at two offsets)\t%d\n", r.dup)
	fmt.Fprintf(tw, "inconsistent (offset conflicts, gaps, order, replicas)\t%d\n", r.incons)
	fmt.Fprintf(tw, "broker/harness problems\t%d\n", len(r.problems))
	fmt.Fprintf(tw, "definitely failed but present (info)\t%d\n", r.failedPresent)
	tw.Flush()
	for _, n := range append(skippedNotes, r.notes...) {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, p := range r.problems {
		fmt.Fprintf(&b, "PROBLEM: %s\n", p)
	}
	for _, e := range r.examples {
		fmt.Fprintf(&b, "VIOLATION: %s\n", e)
	}
	fmt.Fprintf(&b, "history: %s\n", r.history)
	if v := r.violations(); v > 0 {
		fmt.Fprintf(&b, "RESULT: FAIL, %d violations\n", v)
	} else {
		fmt.Fprintf(&b, "RESULT: PASS, 0 violations\n")
	}
	_, _ = w.Write(b.Bytes())
}
