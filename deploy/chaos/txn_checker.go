package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/kbroker/kbroker/internal/clustercheck"
)

// txnReport is the verdict on the transactional workload.
type txnReport struct {
	producers int
	txns      int // transactions begun
	notBegun  int // BeginTransaction failed
	committed int // EndTransaction(TryCommit) returned nil
	aborted   int // never asked to commit: on purpose, after a failed record, or commit not attempted
	onPurpose int // of aborted, meant to abort
	abortErr  int // of aborted, the abort call failed (still never committed)
	unknown   int // the commit call failed
	unknownIn int // of unknown, every record visible
	records   int // records of committed transactions

	consumerRead int // records the read_committed consumer read during the run
	fetches      int // partition fetch responses whose LSO and HW were compared
	finalRead    int // records in the final read_committed read
	lsoRounds    int
	lsoSamples   int
	lsoErrs      int

	abortedVisible int // records of a never-committed transaction some read returned
	lost           int // records of a committed transaction not in the final read
	duplicated     int // records read at two offsets
	notAtomic      int // unknown transactions with some but not all records visible
	stray          int // records read that no logged transaction wrote
	inconsistent   int // offsets read with two values or out of order, read during the run but not at the end
	lsoAhead       int // LSO > HW, by the sampler or in a fetch response

	// The consume-transform-produce pipeline (txn_eos.go).
	eos                                              bool
	eosCommitted, eosAborted, eosFailed, eosSessions int
	eosIn, eosOut                                    int // records in its input and output
	eosLost, eosDup, eosStray, eosReordered          int
	examples                                         []string
	notes                                            []string
}

// violations counts the transactional violations; the workload's own
// problems (a final read that failed) are the run report's problems.
func (r *txnReport) violations() int {
	return r.abortedVisible + r.lost + r.duplicated + r.notAtomic + r.stray + r.inconsistent + r.lsoAhead +
		r.eosLost + r.eosDup + r.eosStray + r.eosReordered
}

func (r *txnReport) example(format string, args ...any) {
	if len(r.examples) < 25 {
		r.examples = append(r.examples, fmt.Sprintf(format, args...))
	}
}

// check compares the logged transactions with what the read_committed
// consumer read during the run (cont) and the final read_committed read
// (final), and takes in the LSO/HW sampler's findings:
//
//  1. no record of a transaction that was never asked to commit (meant
//     to abort, aborted after a failed record, commit not attempted) is
//     read by anyone;
//  2. every record of a transaction whose commit returned success is in
//     the final read exactly once;
//  3. a transaction whose commit call failed is all or nothing: every
//     record in the final read, once, or none;
//  4. whatever the consumer read during the run is in the final read at
//     the same offset (committed records do not move or disappear);
//  5. the last stable offset is never past the high watermark.
func (r *txnReport) check(txns []event, cont *txnReads, final map[int32][]clustercheck.Record, lso *lsoStats) {
	byTxn := map[string]*event{}
	for i := range txns {
		e := &txns[i]
		r.txns++
		switch {
		case e.Outcome == txnNotBegun:
			r.notBegun++
			continue
		case !e.CommitSent:
			r.aborted++
			if e.Intent == "abort" {
				r.onPurpose++
			}
			if e.Outcome != txnAborted {
				r.abortErr++
			}
		case e.Outcome == txnCommitted:
			r.committed++
			r.records += len(e.Values)
		default:
			r.unknown++
		}
		byTxn[e.Txn] = e
	}

	// Where the final read has each value.
	finalAt := map[string][]po{}
	finalVal := map[po]string{}
	for _, rs := range final {
		for _, rec := range rs {
			r.finalRead++
			k := po{rec.Partition, rec.Offset}
			finalAt[rec.Value] = append(finalAt[rec.Value], k)
			finalVal[k] = rec.Value
		}
	}
	cont.mu.Lock()
	defer cont.mu.Unlock()
	r.consumerRead, r.fetches = cont.count, cont.fetches

	// Records nobody logged, and what the consumer read that the final
	// read does not hold there.
	for _, v := range sortedKeysOf(finalAt) {
		if strings.HasPrefix(v, sentinelPrefix) {
			continue
		}
		if byTxn[txnOfValue(v)] == nil {
			r.stray++
			r.example("transactions: %q read at %v, written by no logged transaction", v, finalAt[v])
		}
	}
	for _, v := range sortedKeysOf(cont.where) {
		if strings.HasPrefix(v, sentinelPrefix) {
			continue
		}
		e := byTxn[txnOfValue(v)]
		if e == nil && len(finalAt[v]) == 0 {
			r.stray++
			r.example("transactions: %q read at %v during the run, written by no logged transaction", v, cont.where[v])
		}
		if e == nil || !e.CommitSent {
			continue // counted above or below
		}
		for _, k := range cont.where[v] {
			if fv, ok := finalVal[k]; !ok || fv != v {
				r.inconsistent++
				r.example("transactions: %q read at p%d@%d during the run, the final read has %q there", v, k.p, k.o, fv)
			}
		}
	}
	for _, s := range cont.order {
		r.inconsistent++
		r.example("transactions: read_committed consumer: %s", s)
	}

	for _, id := range sortedKeysOf(byTxn) {
		e := byTxn[id]
		switch {
		case !e.CommitSent:
			for _, v := range e.Values {
				if at := append(append([]po(nil), finalAt[v]...), cont.where[v]...); len(at) > 0 {
					r.abortedVisible++
					r.example("transactions: %q of %s transaction %s (intent %s, %s) read at %v", v, e.Outcome, e.Txn, e.Intent, e.Err, at)
				}
			}
		default:
			visible := 0
			for _, v := range e.Values {
				switch n := len(finalAt[v]); {
				case n == 1:
					visible++
				case n > 1:
					visible++
					r.duplicated++
					r.example("transactions: %q of %s transaction %s read at %v", v, e.Outcome, e.Txn, finalAt[v])
				}
				if len(cont.where[v]) > 1 {
					r.duplicated++
					r.example("transactions: %q of %s transaction %s read during the run at %v", v, e.Outcome, e.Txn, cont.where[v])
				}
			}
			switch {
			case e.Outcome == txnCommitted && visible < len(e.Values):
				r.lost += len(e.Values) - visible
				r.example("transactions: committed transaction %s: %d of its %d records in the final read (%v)", e.Txn, visible, len(e.Values), e.Values)
			case e.Outcome == txnUnknown && visible == len(e.Values):
				r.unknownIn++
			case e.Outcome == txnUnknown && visible > 0:
				r.notAtomic++
				r.example("transactions: transaction %s with unknown outcome (%s): %d of its %d records in the final read (%v)", e.Txn, e.Err, visible, len(e.Values), e.Values)
			}
		}
	}

	// The last stable offset never passes the high watermark.
	for _, s := range cont.lsoBad {
		r.lsoAhead++
		r.example("transactions: %s", s)
	}
	for k, n := range cont.errs {
		r.notes = append(r.notes, fmt.Sprintf("transactions: read_committed consumer: %dx %s", n, k))
	}
	if lso != nil {
		lso.mu.Lock()
		r.lsoRounds, r.lsoSamples = lso.rounds, lso.samples
		for k, n := range lso.errs {
			r.lsoErrs += n
			r.notes = append(r.notes, fmt.Sprintf("transactions: LSO sampler: %dx %s", n, k))
		}
		for _, s := range lso.bad {
			r.lsoAhead++
			r.example("transactions: LSO sampler: %s", s)
		}
		lso.mu.Unlock()
	}
	sort.Strings(r.notes)
}

func sortedKeysOf[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (r *txnReport) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "transactional producers\t%d\n", r.producers)
	fmt.Fprintf(tw, "transactions\t%d\n", r.txns)
	fmt.Fprintf(tw, "  committed\t%d (%d records)\n", r.committed, r.records)
	fmt.Fprintf(tw, "  aborted (never asked to commit)\t%d (%d on purpose, %d abort calls failed)\n", r.aborted, r.onPurpose, r.abortErr)
	fmt.Fprintf(tw, "  unknown (commit call failed)\t%d (%d all visible, %d none)\n", r.unknown, r.unknownIn, r.unknown-r.unknownIn-r.notAtomic)
	fmt.Fprintf(tw, "  not begun (BeginTransaction failed)\t%d\n", r.notBegun)
	fmt.Fprintf(tw, "read_committed records read (during the run / final)\t%d / %d\n", r.consumerRead, r.finalRead)
	fmt.Fprintf(tw, "LSO <= HW checks (fetch responses / sampler)\t%d / %d in %d rounds (%d sampler errors)\n", r.fetches, r.lsoSamples, r.lsoRounds, r.lsoErrs)
	fmt.Fprintf(tw, "aborted record visible\t%d\n", r.abortedVisible)
	fmt.Fprintf(tw, "committed record lost\t%d\n", r.lost)
	fmt.Fprintf(tw, "record duplicated\t%d\n", r.duplicated)
	fmt.Fprintf(tw, "unknown transaction partly visible\t%d\n", r.notAtomic)
	fmt.Fprintf(tw, "record of no transaction\t%d\n", r.stray)
	fmt.Fprintf(tw, "inconsistent read_committed reads\t%d\n", r.inconsistent)
	fmt.Fprintf(tw, "LSO ahead of HW\t%d\n", r.lsoAhead)
	if r.eos {
		fmt.Fprintf(tw, "eos pipeline (GroupTransactSession)\t%d transactions committed, %d aborted, %d failed, %d sessions\n",
			r.eosCommitted, r.eosAborted, r.eosFailed, r.eosSessions)
		fmt.Fprintf(tw, "  records in / out\t%d / %d\n", r.eosIn, r.eosOut)
		fmt.Fprintf(tw, "  input lost / duplicated / stray / reordered in the output\t%d / %d / %d / %d\n", r.eosLost, r.eosDup, r.eosStray, r.eosReordered)
	}
	tw.Flush()
}
