package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/clustercheck"
	"github.com/kbroker/kbroker/internal/testutil"
)

func TestPercentiles(t *testing.T) {
	ps := []float64{0.5, 0.95, 0.99, 0.999}
	hundred := make([]int64, 100)
	for i := range hundred {
		hundred[i] = int64(100 - i) // 100..1, unsorted
	}
	thousand := make([]int64, 1000)
	for i := range thousand {
		thousand[i] = int64(i + 1)
	}
	cases := []struct {
		name    string
		samples []int64
		ps      []float64
		want    []int64
	}{
		{"empty", nil, ps, []int64{0, 0, 0, 0}},
		{"one", []int64{7}, ps, []int64{7, 7, 7, 7}},
		{"two", []int64{9, 3}, ps, []int64{3, 9, 9, 9}},
		{"1..100 reversed", hundred, ps, []int64{50, 95, 99, 100}},
		{"1..1000", thousand, ps, []int64{500, 950, 990, 999}},
		{"duplicates", []int64{5, 5, 5, 1}, []float64{0.25, 0.26, 1}, []int64{1, 5, 5}},
		{"extremes", []int64{4, 2, 8}, []float64{0, 1}, []int64{2, 8}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := percentiles(slices.Clone(c.samples), c.ps)
			if !slices.Equal(got, c.want) {
				t.Errorf("percentiles(%v, %v) = %v, want %v", c.samples, c.ps, got, c.want)
			}
		})
	}
}

func TestReservoirBounded(t *testing.T) {
	exact := reservoir{max: 10}
	for i := range 10 {
		exact.add(int64(i))
	}
	if len(exact.values) != 10 || exact.values[9] != 9 {
		t.Fatalf("under the cap every value is kept, got %v", exact.values)
	}
	r := reservoir{max: 1000}
	for i := range 100_000 {
		r.add(int64(i))
	}
	if len(r.values) != 1000 || r.seen != 100_000 {
		t.Fatalf("len %d seen %d, want 1000 and 100000", len(r.values), r.seen)
	}
	// A uniform sample of 0..99999 has its median near 50000.
	p := percentiles(r.values, []float64{0.5})
	if p[0] < 40_000 || p[0] > 60_000 {
		t.Errorf("median of the sample %d is far from 50000", p[0])
	}
}

func TestPerfProduceFlags(t *testing.T) {
	base := []string{"--bootstrap-server", "127.0.0.1:9092", "--topic", "t", "--num-records", "10"}
	cases := []struct {
		name string
		args []string
		want string // substring of the error; empty is valid
	}{
		{"valid", base, ""},
		{"valid duration", []string{"--bootstrap-server", "a:1,b:2", "--topic", "t", "--duration", "3s", "--acks", "1", "--compression", "zstd"}, ""},
		{"no bootstrap", []string{"--topic", "t", "--num-records", "1"}, "--bootstrap-server"},
		{"no topic", []string{"--bootstrap-server", "a:1", "--num-records", "1"}, "--topic"},
		{"neither count nor duration", []string{"--bootstrap-server", "a:1", "--topic", "t"}, "--num-records or --duration"},
		{"both count and duration", append(slices.Clone(base), "--duration", "1s"), "exclusive"},
		{"bad acks", append(slices.Clone(base), "--acks", "2"), "--acks"},
		{"bad compression", append(slices.Clone(base), "--compression", "brotli"), "--compression"},
		{"bad record size", append(slices.Clone(base), "--record-size", "0"), "--record-size"},
		{"bad throughput", append(slices.Clone(base), "--throughput", "0"), "--throughput"},
		{"bad batch size", append(slices.Clone(base), "--batch-size", "-1"), "--batch-size"},
		{"idempotent with acks 1", append(slices.Clone(base), "--acks", "1", "--idempotent=true"), "--idempotent"},
		{"partitions without create", append(slices.Clone(base), "--partitions", "3"), "--create-topic"},
		{"bad partitions", append(slices.Clone(base), "--create-topic", "--partitions", "0"), "--partitions"},
		{"bad report interval", append(slices.Clone(base), "--report-interval", "0s"), "--report-interval"},
		{"unknown flag", append(slices.Clone(base), "--frobnicate"), "frobnicate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			_, err := parseProduceFlags(c.args, &stderr)
			if c.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one naming %q", c.want)
			}
			if msg := err.Error() + stderr.String(); !strings.Contains(msg, c.want) {
				t.Errorf("error %q does not name %q", msg, c.want)
			}
		})
	}
	// acks other than all turn the idempotent default off.
	c, err := parseProduceFlags(append(slices.Clone(base), "--acks", "0"), io.Discard)
	if err != nil || c.idempotent {
		t.Errorf("--acks 0: idempotent %v, err %v; want false, nil", c.idempotent, err)
	}
	// Through the command: exit 2 and the flag named on stderr.
	var stderr bytes.Buffer
	if code := Perf(append([]string{"produce"}, append(slices.Clone(base), "--acks", "some")...), io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "--acks") {
		t.Errorf("exit %d, stderr %q; want 2 naming --acks", code, stderr.String())
	}
}

func TestPerfConsumeFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"valid", []string{"--bootstrap-server", "a:1", "--topic", "t", "--num-records", "5", "--group", "g"}, ""},
		{"no topic", []string{"--bootstrap-server", "a:1", "--duration", "1s"}, "--topic"},
		{"no bootstrap", []string{"--topic", "t", "--duration", "1s"}, "--bootstrap-server"},
		{"negative count", []string{"--bootstrap-server", "a:1", "--topic", "t", "--num-records", "-5"}, "--num-records"},
		{"bad timeout", []string{"--bootstrap-server", "a:1", "--topic", "t", "--duration", "1s", "--timeout", "0s"}, "--timeout"},
		{"neither", []string{"--bootstrap-server", "a:1", "--topic", "t"}, "--num-records or --duration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseConsumeFlags(c.args, io.Discard)
			if c.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v does not name %q", err, c.want)
			}
		})
	}
}

var (
	produceSummaryRE = regexp.MustCompile(`^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, ([\d.]+) ms 50th, ([\d.]+) ms 95th, ([\d.]+) ms 99th, ([\d.]+) ms 99\.9th\.$`)
	consumeValuesRE  = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}), (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}), ([\d.]+), ([\d.]+), (\d+), ([\d.]+)$`)
)

// startBrokerProcess builds kbroker and runs a single node of it, returning
// its client address once it answers Metadata. Its ports are reserved
// until just before the start; a start that lost one to another process
// in between is retried on new ports.
func startBrokerProcess(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := testutil.BuildKbroker(t, dir)
	for attempt := 1; ; attempt++ {
		addr, logs, err := tryStartBrokerProcess(t, bin, filepath.Join(dir, fmt.Sprintf("data-%d", attempt)))
		if err == nil {
			return addr
		}
		if attempt == 3 || !testutil.AddrInUse(err, logs.String()) {
			t.Fatalf("%v; broker log:\n%s", err, logs.String())
		}
		t.Logf("start attempt %d lost a port, retrying on new ones: %v", attempt, err)
	}
}

func tryStartBrokerProcess(t *testing.T, bin, dataDir string) (string, *testutil.SyncBuffer, error) {
	ports := testutil.MustReservePorts(t, 2)
	addr, ctrl := ports.Addr(0), ports.Addr(1)
	logs := &testutil.SyncBuffer{}
	cmd := exec.Command(bin, "serve",
		"--set", "node.id=1",
		"--set", fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://%s", addr, ctrl),
		"--set", "controller.quorum.voters=1@"+ctrl,
		"--set", "log.dirs="+dataDir,
		"--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logs, logs
	ports.MustRelease(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("broker log:\n%s", logs.String())
		}
	})
	err := testutil.Poll(context.Background(), 10*time.Second, func() error {
		select {
		case <-exited:
			if waitErr == nil {
				return testutil.Permanent(errors.New("broker exited early with status 0"))
			}
			return testutil.Permanent(fmt.Errorf("broker exited early: %w", waitErr))
		default:
		}
		return clustercheck.Ready(context.Background(), addr)
	})
	if err != nil {
		return "", logs, fmt.Errorf("broker at %s not serving metadata: %w", addr, err)
	}
	return addr, logs, nil
}

// Produce and consume 20000 records through the perf commands against a
// real broker process, and check both summaries.
func TestPerfProduceConsumeAgainstBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a broker process")
	}
	addr := startBrokerProcess(t)
	const n = 20000

	var out, errs bytes.Buffer
	code := Perf([]string{"produce", "--bootstrap-server", addr, "--topic", "perf-test",
		"--create-topic", "--partitions", "3", "--replication-factor", "1",
		"--num-records", strconv.Itoa(n), "--record-size", "100", "--acks", "all",
		"--compression", "lz4", "--report-interval", "200ms"}, &out, &errs)
	if code != 0 {
		t.Fatalf("perf produce exit %d\nstdout: %s\nstderr: %s", code, out.String(), errs.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	m := produceSummaryRE.FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		t.Fatalf("last produce line does not parse: %q", lines[len(lines)-1])
	}
	if m[1] != strconv.Itoa(n) {
		t.Errorf("produce summary counts %s records, want %d", m[1], n)
	}
	for i := 2; i < len(m); i++ {
		if _, err := strconv.ParseFloat(m[i], 64); err != nil {
			t.Errorf("field %d %q: %v", i, m[i], err)
		}
	}
	t.Logf("produce: %s", lines[len(lines)-1])

	out.Reset()
	errs.Reset()
	code = Perf([]string{"consume", "--bootstrap-server", addr, "--topic", "perf-test",
		"--num-records", strconv.Itoa(n), "--timeout", "10s"}, &out, &errs)
	if code != 0 {
		t.Fatalf("perf consume exit %d\nstdout: %s\nstderr: %s", code, out.String(), errs.String())
	}
	lines = strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || lines[0] != consumeHeader {
		t.Fatalf("consume stdout is not a header and one line: %q", out.String())
	}
	m = consumeValuesRE.FindStringSubmatch(lines[1])
	if m == nil {
		t.Fatalf("consume values do not parse: %q", lines[1])
	}
	if m[5] != strconv.Itoa(n) {
		t.Errorf("consumed %s records, want %d", m[5], n)
	}
	if mb, _ := strconv.ParseFloat(m[3], 64); mb < float64(n*100)/mib*0.999 {
		t.Errorf("consumed %.4f MB, want about %.4f", mb, float64(n*100)/mib)
	}
	t.Logf("consume: %s", lines[1])
}
