package main

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/kbroker/kbroker/internal/clustercheck"
)

// report is the checker's verdict.
type report struct {
	target, seed, took string
	producers          int
	ops, ok, fail, ind int
	faultCount         map[string]int
	faultFailed        map[string]int
	gaps               map[string]clustercheck.Gap // client-visible, per fault kind
	failover           map[string]failover         // server-side, per fault kind
	skipped            map[string]string
	lost, misplaced    int
	dup, incons        int
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
	txn                *txnReport // nil without transactional producers
}

func (r *report) violations() int {
	v := r.lost + r.misplaced + r.dup + r.incons + len(r.problems)
	if r.txn != nil {
		v += r.txn.violations()
	}
	return v
}

func (r *report) example(format string, args ...any) {
	if len(r.examples) < 25 {
		r.examples = append(r.examples, fmt.Sprintf(format, args...))
	}
}

// check runs the shared invariant checker (clustercheck.Check) on the
// history and the final read, then the checks only a harness with
// long-running consumers can make: what every consumer session read.
func (r *report) check(sends []event, rd *reads, final map[int32][]clustercheck.Record, ends map[int32]int64) {
	acks := clustercheck.NewAcks()
	failed := map[string]bool{}
	for _, s := range sends {
		r.ops++
		switch s.Outcome {
		case outOK:
			r.ok++
			acks.Ack(s.Partition, s.Offset, s.Value)
		case outFail:
			r.fail++
			failed[s.Value] = true
		default:
			r.ind++
		}
	}
	res := clustercheck.Check(acks, final, ends)
	r.finalRecords = res.Read
	// The producers are idempotent: a value twice in the log is a
	// violation here, unlike for itest's non-idempotent clients.
	r.lost, r.misplaced, r.dup = len(res.Lost), len(res.Misplaced), len(res.Duplicated)
	r.incons += len(res.Conflicts) + len(res.Gaps)
	for _, group := range []struct {
		what  string
		lines []string
	}{{"lost", res.Lost}, {"misplaced", res.Misplaced}, {"duplicate", res.Duplicated},
		{"conflicting acknowledgements", res.Conflicts}, {"offsets", res.Gaps}} {
		for _, l := range group.lines {
			r.example("%s: %s", group.what, l)
		}
	}
	for _, rs := range final {
		for _, rec := range rs {
			if failed[rec.Value] {
				r.failedPresent++
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
}

// mixKind is the row of faults injected while another one was active:
// with two of three nodes down or cut off there may be no quorum, so
// their gaps say nothing about what one fault costs.
const mixKind = "(two faults at once)"

// othersSuffix marks, in clientGaps' keys, the gaps of partitions the
// faulted node did not lead when the fault began.
const othersSuffix = "/others"

// singled returns faults sorted by start, each one that overlaps another
// renamed mixKind.
func singled(faults []fault) []fault {
	fs := append([]fault(nil), faults...)
	sort.Slice(fs, func(i, j int) bool { return fs[i].Start.Before(fs[j].Start) })
	end := func(f fault) time.Time {
		if f.End.IsZero() {
			return f.Start.Add(100 * 365 * 24 * time.Hour) // never ended
		}
		return f.End
	}
	mixed := make([]bool, len(fs))
	for i := range fs {
		for j := i + 1; j < len(fs) && fs[j].Start.Before(end(fs[i])); j++ {
			mixed[i], mixed[j] = true, true
		}
	}
	for i := range fs {
		if mixed[i] {
			fs[i].Kind = mixKind
		}
	}
	return fs
}

// clientGaps is the longest time one partition went without an
// acknowledgement as the producers saw it (the callback time of each
// successful send), keyed by the fault that started the gap: its kind
// for the partitions the faulted node led, kind+othersSuffix for the
// others, mixKind for faults overlapping another. A gap is attributed to
// the earliest fault injected inside it, else to the last one injected
// before it began (its after-effects: a stall after healing counts).
// Gaps before the first fault are under "".
func clientGaps(sends []event, faults []fault, end time.Time) map[string]clustercheck.Gap {
	fs := singled(faults)
	byPart := map[int32][]time.Time{}
	for _, s := range sends {
		if s.Outcome == outOK {
			byPart[s.Partition] = append(byPart[s.Partition], s.Time)
		}
	}
	out := map[string]clustercheck.Gap{}
	consider := func(p int32, from, to time.Time) {
		if !to.After(from) {
			return
		}
		key := ""
		i := sort.Search(len(fs), func(i int) bool { return fs[i].Start.After(from) })
		if i >= len(fs) || !fs[i].Start.Before(to) {
			i--
		}
		if i >= 0 {
			f := fs[i]
			key = f.Kind
			if f.Kind != mixKind && !slices.Contains(f.Led, p) {
				key += othersSuffix
			}
		}
		g := clustercheck.Gap{Kind: key, Partition: p, From: from, To: to}
		if old, ok := out[key]; !ok || g.Duration() > old.Duration() {
			out[key] = g
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

// failover is the server-side leadership change of one fault kind: the
// longest time from injecting such a fault to the metadata showing a new
// leader epoch for every partition the faulted node led.
type failover struct {
	longest  time.Duration
	measured int // faults whose node led partitions and that were watched
	never    int // of those, no change within the watch
}

func failovers(faults []fault) map[string]failover {
	out := map[string]failover{}
	for _, f := range singled(faults) {
		if f.LedParts == 0 || keepsLeadership(f.Kind) {
			continue
		}
		fo := out[f.Kind]
		fo.measured++
		if f.Failover > 0 {
			fo.longest = max(fo.longest, f.Failover)
		} else {
			fo.never++
		}
		out[f.Kind] = fo
	}
	return out
}

func (fo failover) String() string {
	switch {
	case fo.measured == 0:
		return "-"
	case fo.never > 0:
		return fmt.Sprintf("%v (%d of %d: none within %v)", fo.longest.Round(time.Millisecond), fo.never, fo.measured, failoverWatch)
	}
	return fo.longest.Round(time.Millisecond).String()
}

func gapString(g clustercheck.Gap, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%v (p%d from %s)", g.Duration().Round(time.Millisecond), g.Partition, g.From.Format("15:04:05.000"))
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
	fmt.Fprintf(tw, "fault\tinjected\tfault errors\tclient: longest ack gap, faulted node's partitions\tclient: other partitions\tserver: leader change\n")
	total := 0
	var skippedNotes []string
	for _, k := range append(slices.Clone(allNemeses), extraNemeses...) {
		if why, ok := r.skipped[k]; ok {
			fmt.Fprintf(tw, "%s\t-\t-\tskipped\t\n", k)
			skippedNotes = append(skippedNotes, fmt.Sprintf("%s skipped: %s", k, why))
			continue
		}
		total += r.faultCount[k]
		g, ok := r.gaps[k]
		og, ook := r.gaps[k+othersSuffix]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", k, r.faultCount[k], r.faultFailed[k], gapString(g, ok), gapString(og, ook), r.failover[k])
	}
	if g, ok := r.gaps[mixKind]; ok {
		fmt.Fprintf(tw, "%s\t\t\t%s\t\t%s\n", mixKind, gapString(g, ok), r.failover[mixKind])
	}
	g, ok := r.gaps[""]
	fmt.Fprintf(tw, "(before any fault)\t\t\t%s\t\t\n", gapString(g, ok))
	fmt.Fprintf(tw, "total\t%d\t\t\t\n", total)
	tw.Flush()
	fmt.Fprintf(&b, "\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "lost (acknowledged, not in the final read)\t%d\n", r.lost)
	fmt.Fprintf(tw, "misplaced (acknowledged, read at another offset)\t%d\n", r.misplaced)
	fmt.Fprintf(tw, "duplicated (a value at two offsets)\t%d\n", r.dup)
	fmt.Fprintf(tw, "inconsistent (offset conflicts, gaps, order, replicas)\t%d\n", r.incons)
	fmt.Fprintf(tw, "broker/harness problems\t%d\n", len(r.problems))
	fmt.Fprintf(tw, "definitely failed but present (info)\t%d\n", r.failedPresent)
	tw.Flush()
	if r.txn != nil {
		fmt.Fprintf(&b, "\n")
		r.txn.print(&b)
	}
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
