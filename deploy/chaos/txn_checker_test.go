package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/internal/clustercheck"
)

// The transactional checker finds each kind of violation, and only it, in
// a small history: committed t0-0 and t0-1, t0-2 aborted on purpose, t1-0
// aborted after a failed record, t1-1 and t1-2 with unknown outcomes.
func TestTxnChecker(t *testing.T) {
	txns := []event{
		{Kind: "txn", Txn: "t0-0", Intent: "commit", CommitSent: true, Outcome: txnCommitted, Values: []string{"t0-0-0", "t0-0-1"}},
		{Kind: "txn", Txn: "t0-1", Intent: "commit", CommitSent: true, Outcome: txnCommitted, Values: []string{"t0-1-0"}},
		{Kind: "txn", Txn: "t0-2", Intent: "abort", Outcome: txnAborted, Values: []string{"t0-2-0", "t0-2-1"}},
		{Kind: "txn", Txn: "t1-0", Intent: "commit", Outcome: txnUnknown, Err: "produce: timeout; abort: EOF", Values: []string{"t1-0-0"}},
		{Kind: "txn", Txn: "t1-1", Intent: "commit", CommitSent: true, Outcome: txnUnknown, Values: []string{"t1-1-0", "t1-1-1"}},
		{Kind: "txn", Txn: "t1-2", Intent: "commit", CommitSent: true, Outcome: txnUnknown, Values: []string{"t1-2-0", "t1-2-1"}},
		{Kind: "txn", Txn: "t1-3", Outcome: txnNotBegun},
	}
	// A clean final read: t1-1 committed, t1-2 aborted; a sentinel.
	clean := func() map[int32][]clustercheck.Record {
		return map[int32][]clustercheck.Record{
			0: {{Partition: 0, Offset: 0, Value: "t0-0-0"}, {Partition: 0, Offset: 4, Value: "t1-1-0"}, {Partition: 0, Offset: 9, Value: sentinelPrefix + "0"}},
			1: {{Partition: 1, Offset: 0, Value: "t0-0-1"}, {Partition: 1, Offset: 2, Value: "t0-1-0"}, {Partition: 1, Offset: 7, Value: "t1-1-1"}},
		}
	}
	add := func(f map[int32][]clustercheck.Record, p int32, o int64, v string) map[int32][]clustercheck.Record {
		f[p] = append(f[p], clustercheck.Record{Partition: p, Offset: o, Value: v})
		return f
	}
	drop := func(f map[int32][]clustercheck.Record, v string) map[int32][]clustercheck.Record {
		for p, rs := range f {
			var keep []clustercheck.Record
			for _, r := range rs {
				if r.Value != v {
					keep = append(keep, r)
				}
			}
			f[p] = keep
		}
		return f
	}
	for _, tc := range []struct {
		name  string
		final map[int32][]clustercheck.Record
		cont  func(*txnReads)
		lso   func(*lsoStats)
		field func(*txnReport) int
		want  string // in the examples
	}{
		{name: "clean", final: clean(), cont: func(r *txnReads) { r.add(0, 0, "t0-0-0"); r.add(0, 4, "t1-1-0") }},
		{name: "aborted on purpose, in the final read", final: add(clean(), 1, 9, "t0-2-1"),
			field: func(r *txnReport) int { return r.abortedVisible }, want: `"t0-2-1" of aborted transaction t0-2`},
		{name: "aborted after a failed record, read during the run only", final: clean(), cont: func(r *txnReads) { r.add(1, 5, "t1-0-0") },
			field: func(r *txnReport) int { return r.abortedVisible }, want: `"t1-0-0" of unknown transaction t1-0`},
		{name: "committed record lost", final: drop(clean(), "t0-0-1"),
			field: func(r *txnReport) int { return r.lost }, want: "committed transaction t0-0: 1 of its 2"},
		{name: "committed record twice", final: add(clean(), 1, 3, "t0-1-0"),
			field: func(r *txnReport) int { return r.duplicated }, want: `"t0-1-0" of committed transaction t0-1 read at`},
		{name: "unknown outcome, half visible", final: add(clean(), 0, 6, "t1-2-0"),
			field: func(r *txnReport) int { return r.notAtomic }, want: "t1-2 with unknown outcome"},
		{name: "a record nobody wrote", final: add(clean(), 0, 8, "t7-7-0"),
			field: func(r *txnReport) int { return r.stray }, want: `"t7-7-0"`},
		{name: "read during the run, gone at the end", final: clean(), cont: func(r *txnReads) { r.add(1, 1, "t0-1-0") },
			field: func(r *txnReport) int { return r.inconsistent }, want: `"t0-1-0" read at p1@1 during the run`},
		{name: "LSO past HW in a fetch response", final: clean(),
			cont: func(r *txnReads) {
				r.lsoBad = append(r.lsoBad, "fetch response for p1: last stable offset 9 > high watermark 8")
			},
			field: func(r *txnReport) int { return r.lsoAhead }, want: "last stable offset 9 > high watermark 8"},
		{name: "LSO past HW by the sampler", final: clean(),
			lso: func(s *lsoStats) {
				s.bad = append(s.bad, "p0: leader 1 epoch 3 answered last stable offset 5, then high watermark 4")
			},
			field: func(r *txnReport) int { return r.lsoAhead }, want: "LSO sampler: p0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cont, lso := newTxnReads(), &lsoStats{}
			if tc.cont != nil {
				tc.cont(cont)
			}
			if tc.lso != nil {
				tc.lso(lso)
			}
			r := &txnReport{producers: 2}
			r.check(append([]event(nil), txns...), cont, tc.final, lso)
			if r.committed != 2 || r.aborted != 2 || r.onPurpose != 1 || r.abortErr != 1 || r.unknown != 2 || r.notBegun != 1 || r.records != 3 {
				t.Errorf("counts: %+v", r)
			}
			want := 0
			if tc.field != nil {
				want = 1
				if got := tc.field(r); got != 1 {
					t.Errorf("count %d, want 1", got)
				}
			} else if r.unknownIn != 1 {
				t.Errorf("unknown transactions all visible: %d, want 1 (t1-1)", r.unknownIn)
			}
			if r.violations() != want {
				t.Errorf("%d violations, want %d: %q", r.violations(), want, r.examples)
			}
			if tc.want != "" && !strings.Contains(strings.Join(r.examples, "\n"), tc.want) {
				t.Errorf("examples %q lack %q", r.examples, tc.want)
			}
			var out bytes.Buffer
			r.print(&out)
			for _, s := range []string{"committed  ", "unknown (commit call failed)", "LSO ahead of HW"} {
				if !strings.Contains(out.String(), s) {
					t.Errorf("summary lacks %q:\n%s", s, out.String())
				}
			}
		})
	}
}

// The pipeline's checker wants each input record, sentinel included,
// once in the output, in the same partition and order.
func TestEOSChecker(t *testing.T) {
	rec := func(p int32, o int64, v string) clustercheck.Record {
		return clustercheck.Record{Partition: p, Offset: o, Value: v}
	}
	in := map[int32][]clustercheck.Record{0: {rec(0, 0, "a"), rec(0, 3, "b")}, 1: {rec(1, 1, "c")}}
	sentinels := map[int32]string{0: "end-0", 1: "end-1"}
	for _, tc := range []struct {
		name  string
		out   map[int32][]clustercheck.Record
		field func(*txnReport) int
		want  string
	}{
		{name: "exactly once", out: map[int32][]clustercheck.Record{
			0: {rec(0, 0, "a"), rec(0, 2, "b"), rec(0, 4, "end-0")}, 1: {rec(1, 0, "c"), rec(1, 2, "end-1")}}},
		{name: "lost", out: map[int32][]clustercheck.Record{
			0: {rec(0, 0, "a"), rec(0, 4, "end-0")}, 1: {rec(1, 0, "c"), rec(1, 2, "end-1")}},
			field: func(r *txnReport) int { return r.eosLost }, want: `input "b" of p0`},
		{name: "duplicated", out: map[int32][]clustercheck.Record{
			0: {rec(0, 0, "a"), rec(0, 2, "b"), rec(0, 4, "end-0")}, 1: {rec(1, 0, "c"), rec(1, 2, "c"), rec(1, 4, "end-1")}},
			field: func(r *txnReport) int { return r.eosDup }, want: `"c" more than once in p1`},
		{name: "stray (an aborted input copied)", out: map[int32][]clustercheck.Record{
			0: {rec(0, 0, "a"), rec(0, 1, "x"), rec(0, 2, "b"), rec(0, 4, "end-0")}, 1: {rec(1, 0, "c"), rec(1, 2, "end-1")}},
			field: func(r *txnReport) int { return r.eosStray }, want: `"x" at p0@1`},
		{name: "reordered", out: map[int32][]clustercheck.Record{
			0: {rec(0, 0, "b"), rec(0, 2, "a"), rec(0, 4, "end-0")}, 1: {rec(1, 0, "c"), rec(1, 2, "end-1")}},
			field: func(r *txnReport) int { return r.eosReordered }, want: "p0 out of order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &txnReport{}
			r.checkEOS(in, sentinels, tc.out, &eosStats{committed: 3})
			want := 0
			if tc.field != nil {
				want = 1
				if got := tc.field(r); got != 1 {
					t.Errorf("count %d, want 1", got)
				}
			}
			if r.violations() != want || r.eosIn != 5 || !r.eos || r.eosCommitted != 3 {
				t.Errorf("%d violations (want %d), %d in: %q", r.violations(), want, r.eosIn, r.examples)
			}
			if tc.want != "" && !strings.Contains(strings.Join(r.examples, "\n"), tc.want) {
				t.Errorf("examples %q lack %q", r.examples, tc.want)
			}
		})
	}
}
