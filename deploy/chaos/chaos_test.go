package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"
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
	if res.violations != 0 || res.exitCode() != 0 {
		t.Errorf("%d violations, exit code %d", res.violations, res.exitCode())
	}
}

func TestFlags(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseFlags([]string{"--nemeses", "kill-leader,nope"}, &out); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown nemesis accepted: %v", err)
	}
	cfg, err := parseFlags([]string{"--nemeses", "bounce,pause-leader", "--producers", "2", "--seed", "7"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.nemeses) != 2 || cfg.producers != 2 || cfg.seed != 7 || cfg.duration != 2*time.Minute {
		t.Errorf("parsed %+v", cfg)
	}
}

func TestLongestGap(t *testing.T) {
	base := time.Unix(1000, 0)
	at := func(s float64) time.Time { return base.Add(time.Duration(s * float64(time.Second))) }
	acks := []time.Time{at(0), at(1), at(5), at(5.5), at(10)}
	// A fault from 2 to 3 overlaps the gap 1..5.
	if g := longestGap(acks, at(2), at(3), at(20)); g != 4*time.Second {
		t.Errorf("gap %v, want 4s", g)
	}
	// A fault from 5.2 to 6 overlaps 5..5.5 and 5.5..10.
	if g := longestGap(acks, at(5.2), at(6), at(20)); g != 4500*time.Millisecond {
		t.Errorf("gap %v, want 4.5s", g)
	}
	// After the last ack the gap runs to the end of the run.
	if g := longestGap(acks, at(11), at(12), at(20)); g != 10*time.Second {
		t.Errorf("gap %v, want 10s", g)
	}
}

// testLogWriter streams the harness's output into the test log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
