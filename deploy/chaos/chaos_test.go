package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/internal/clustercheck"
)

// TestChaosSubprocess is what CI runs: three local kbroker processes,
// every nemesis at least once, then random mixes until the duration is
// up; zero lost, duplicated or inconsistent records, no broker problem.
// CHAOS_KBROKER names a prebuilt binary; CHAOS_SEED fixes the seed.
func TestChaosSubprocess(t *testing.T) {
	dur := "100s"
	if testing.Short() {
		dur = "40s"
	}
	args := []string{"--target", "subprocess", "--duration", dur, "--history", t.TempDir() + "/history.jsonl"}
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		args = append(args, "--seed", s)
	}
	var out bytes.Buffer
	cfg, err := parseFlags(args, &out)
	if err != nil {
		t.Fatal(err)
	}
	cfg.out = io.MultiWriter(&out, testLogWriter{t})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute+30*time.Second)
	defer cancel()
	res := run(ctx, cfg)
	if res.setupErr != nil {
		t.Fatalf("setup: %v", res.setupErr)
	}
	if res.report == nil {
		t.Fatalf("no report")
	}
	for _, k := range allNemeses {
		if _, skipped := res.report.skipped[k]; skipped {
			continue
		}
		if res.report.faultCount[k] == 0 {
			t.Errorf("nemesis %s never injected", k)
		}
	}
	if res.report.ok == 0 {
		t.Errorf("no write was acknowledged")
	}
	// The transactional workload ran beside it (2 producers by default).
	if tr := res.report.txn; tr == nil || tr.committed == 0 || tr.onPurpose == 0 || tr.finalRead == 0 || tr.lsoSamples == 0 || tr.eosCommitted == 0 {
		t.Errorf("transactional workload did not run or checked nothing: %+v", tr)
	}
	if res.violations != 0 || res.exitCode() != 0 {
		t.Errorf("%d violations, exit code %d", res.violations, res.exitCode())
	}
}

func TestFlags(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseFlags([]string{"--nemeses", "kill-leader,nope"}, &out); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown nemesis accepted: %v", err)
	}
	for _, bad := range [][]string{{"--security", "ssl"}, {"--security", "sasl_ssl", "--target", "compose"}} {
		if _, err := parseFlags(bad, &out); err == nil || !strings.Contains(err.Error(), "--security") {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
	cfg, err := parseFlags([]string{"--nemeses", "bounce,pause-leader", "--producers", "2", "--seed", "7"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.nemeses) != 2 || cfg.producers != 2 || cfg.seed != 7 || cfg.duration != 2*time.Minute || cfg.security != secPlaintext {
		t.Errorf("parsed %+v", cfg)
	}
	// Transactional producers: on by default for subprocesses, off for
	// compose unless asked for.
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 2},
		{[]string{"--target", "compose"}, 0},
		{[]string{"--target", "compose", "--txn-producers", "3"}, 3},
		{[]string{"--txn-producers", "0"}, 0},
	} {
		cfg, err := parseFlags(tc.args, &out)
		if err != nil || cfg.txnProducers != tc.want {
			t.Errorf("%q: txn producers %v (%v), want %d", tc.args, cfg, err, tc.want)
		}
	}
	if _, err := parseFlags([]string{"--txn-producers", "65"}, &out); err == nil {
		t.Errorf("--txn-producers 65 accepted")
	}
}

// The summary reports, per nemesis, the longest client-visible gap of one
// partition (attributed to the fault that started it) next to the
// server-side leadership change, and both columns are in the table.
func TestUnavailabilitySummary(t *testing.T) {
	base := time.Unix(1000, 0)
	at := func(s float64) time.Time { return base.Add(time.Duration(s * float64(time.Second))) }
	ack := func(p int32, s float64) event {
		return event{Time: at(s), Kind: "send", Outcome: outOK, Partition: p}
	}
	sends := []event{
		ack(0, 0), ack(1, 0), ack(0, 1), ack(1, 1),
		// kill-leader at 2 cuts p0 from 1.9 to 30: the producer's view.
		ack(0, 1.9), ack(1, 2.5), ack(1, 3), ack(0, 30), ack(1, 31),
		// pause-leader at 40 (ended 46): p1 silent 39.5..50.
		ack(0, 39), ack(1, 39.5), ack(0, 41), ack(1, 50), ack(0, 51), ack(1, 51),
		// isolate and kill-leader together at 70: p0 silent 69..99.
		ack(0, 69), ack(1, 69), ack(1, 71), ack(0, 99), ack(1, 99.5),
		{Time: at(20), Kind: "send", Outcome: outIndefinite, Partition: -1},
	}
	faults := []fault{
		{Kind: "kill-leader", Start: at(2), End: at(5), LedParts: 1, Led: []int32{0}, Failover: 3200 * time.Millisecond},
		{Kind: "pause-leader", Start: at(40), End: at(46), LedParts: 2, Led: []int32{1, 2}, Failover: 0},
		{Kind: "bounce", Start: at(60), End: at(61), LedParts: 0},
		// Two at once: their gaps go to the mix row, not to isolate's.
		{Kind: "isolate", Start: at(70), End: at(80), LedParts: 1, Led: []int32{0}, Failover: 9 * time.Second},
		{Kind: "kill-leader", Start: at(72), End: at(75), LedParts: 1, Led: []int32{1}, Failover: 20 * time.Second},
	}
	gaps := clientGaps(sends, faults, at(100))
	if g := gaps["kill-leader"]; g.Partition != 0 || g.Duration() != 28100*time.Millisecond {
		t.Errorf("kill-leader gap %+v (%v), want p0 28.1s", g, g.Duration())
	}
	if g := gaps["pause-leader"]; g.Partition != 1 || g.Duration() != 10500*time.Millisecond {
		t.Errorf("pause-leader gap %+v (%v), want p1 10.5s", g, g.Duration())
	}
	// p0, which the paused node did not lead: 41..51.
	if g := gaps["pause-leader"+othersSuffix]; g.Partition != 0 || g.Duration() != 10*time.Second {
		t.Errorf("pause-leader gap of other partitions %+v (%v), want p0 10s", g, g.Duration())
	}
	if g := gaps[mixKind]; g.Partition != 0 || g.Duration() != 30*time.Second {
		t.Errorf("mixed faults gap %+v (%v), want p0 30s", g, g.Duration())
	}
	if _, ok := gaps["isolate"]; ok {
		t.Errorf("isolate has a gap of its own, though it was only ever mixed: %+v", gaps["isolate"])
	}
	if g, ok := gaps[""]; !ok || g.Duration() != time.Second {
		t.Errorf("gap before any fault %+v, want 1s", g)
	}
	fo := failovers(faults)
	if fo["kill-leader"].longest != 3200*time.Millisecond || fo["pause-leader"].never != 1 || fo["bounce"].measured != 0 ||
		fo[mixKind].longest != 20*time.Second || fo["isolate"].measured != 0 {
		t.Errorf("failovers %+v", fo)
	}
	r := &report{faultCount: map[string]int{"kill-leader": 1, "pause-leader": 1, "bounce": 1},
		skipped: map[string]string{"isolate": "no"}, gaps: gaps, failover: fo}
	var out bytes.Buffer
	r.print(&out)
	for _, want := range []string{"client: longest ack gap, faulted node's partitions", "client: other partitions",
		"server: leader change", mixKind, "30s (p0 from",
		"28.1s (p0 from", "3.2s", "10.5s (p1 from", "none within"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

// testLogWriter streams the harness's output into the test log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestChaosSecure is the chaos run on a cluster with SASL_SSL everywhere
// (issue 10): clients and brokers over TLS with SCRAM-SHA-512, mutual TLS
// between controllers, the StandardAuthorizer denying whatever no ACL
// allows, encrypted gossip; kill-leader and bounce under acks=all load.
func TestChaosSecure(t *testing.T) {
	dur := "60s"
	if testing.Short() {
		dur = "15s"
	}
	args := []string{"--security", "sasl_ssl", "--nemeses", "kill-leader,bounce", "--duration", dur,
		"--history", t.TempDir() + "/history.jsonl"}
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		args = append(args, "--seed", s)
	}
	var out bytes.Buffer
	cfg, err := parseFlags(args, &out)
	if err != nil {
		t.Fatal(err)
	}
	cfg.out = io.MultiWriter(&out, testLogWriter{t})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res := run(ctx, cfg)
	if res.setupErr != nil {
		t.Fatalf("setup: %v", res.setupErr)
	}
	if res.report == nil {
		t.Fatalf("no report")
	}
	// Transactions span brokers: markers and produce verification cross
	// the SASL_SSL inter-broker listener.
	if tr := res.report.txn; tr == nil || tr.committed == 0 || tr.finalRead == 0 || tr.eosCommitted == 0 {
		t.Errorf("transactional workload did not run or checked nothing: %+v", tr)
	}
	if !strings.Contains(out.String(), "target subprocess (SASL_SSL)") {
		t.Errorf("the summary does not name the secure target")
	}
	for _, k := range []string{"kill-leader", "bounce"} {
		if res.report.faultCount[k] == 0 {
			t.Errorf("nemesis %s never injected", k)
		}
	}
	if res.report.ok == 0 {
		t.Errorf("no write was acknowledged")
	}
	if res.violations != 0 || res.exitCode() != 0 {
		t.Errorf("%d violations, exit code %d", res.violations, res.exitCode())
	}
}

// The secure target is secure: its client listener answers the harness's
// TLS + SCRAM client and nobody without both, or with a wrong password.
func TestSecureTargetRefusesOthers(t *testing.T) {
	dir := t.TempDir()
	tg, err := newProcTarget(os.Getenv("CHAOS_KBROKER"), dir, secSASLSSL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	defer tg.close()
	if err := tg.start(ctx); err != nil {
		t.Fatal(err)
	}
	addr := tg.addr(1)
	if err := clustercheck.Ready(ctx, addr, tg.security()...); err != nil {
		t.Fatalf("the harness's own client: %v", err)
	}
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"plaintext", nil},
		{"TLS without SASL", []kgo.Opt{kgo.DialTLSConfig(tg.secure.tls.Clone())}},
		{"wrong password", []kgo.Opt{kgo.DialTLSConfig(tg.secure.tls.Clone()),
			kgo.SASL(kscram.Auth{User: adminUser, Pass: "not-the-password"}.AsSha512Mechanism())}},
	} {
		if err := clustercheck.Ready(ctx, addr, tc.opts...); err == nil {
			t.Errorf("%s: metadata answered on the SASL_SSL listener", tc.name)
		}
	}
}
