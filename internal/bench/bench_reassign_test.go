package bench

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/internal/testutil"
)

func TestBenchFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		bad  string // the flag named in the error; "" is valid
	}{
		{"defaults", []string{"--mode", "reassign"}, ""},
		{"sizes", []string{"--mode", "reassign", "--preload-mb", "4", "--throttle-mb", "0.5", "--load-rate", "50", "--baseline", "1s"}, ""},
		{"no preload", []string{"--mode", "reassign", "--preload-mb", "0"}, "preload-mb"},
		{"no throttle", []string{"--mode", "reassign", "--throttle-mb", "0"}, "throttle-mb"},
		{"no load", []string{"--mode", "reassign", "--load-rate", "-1"}, "load-rate"},
		{"one partition", []string{"--mode", "reassign", "--partitions", "1"}, "partitions"},
		// Other modes ignore the reassign flags' values.
		{"compare", []string{"--mode", "compare", "--preload-mb", "0"}, ""},
		{"unknown mode", []string{"--mode", "grow"}, "mode"},
		{"replication factor 1", []string{"--replication-factor", "1"}, ""},
		{"replication factor 4 on three nodes", []string{"--replication-factor", "4"}, "replication-factor"},
		{"replication factor 0", []string{"--replication-factor", "0"}, "replication-factor"},
		{"settle", []string{"--mode", "failover", "--settle", "5s"}, ""},
		{"negative settle", []string{"--mode", "failover", "--settle", "-1s"}, "settle"},
		{"rolling", []string{"--mode", "rolling", "--kills", "3", "--rate", "500"}, ""},
		{"rolling without restarts", []string{"--mode", "rolling", "--kills", "0"}, "kills"},
		{"newtopic", []string{"--mode", "newtopic", "--topics", "3", "--partitions", "2"}, ""},
		{"newtopic without topics", []string{"--mode", "newtopic", "--topics", "0"}, "topics"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			_, err := parseBenchFlags(c.args, &stderr)
			switch {
			case c.bad == "" && err != nil:
				t.Fatalf("parseBenchFlags(%q): %v", c.args, err)
			case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
				t.Fatalf("parseBenchFlags(%q) = %v, want an error naming --%s", c.args, err, c.bad)
			}
		})
	}
}

var reassignRowRE = regexp.MustCompile(`^(unthrottled|throttled [\d.]+ MB/s)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+) ms\s+([\d.]+) ms\s+(\d+)$`)

// kbroker bench --mode reassign at a tiny size against real nodes: both
// moves copy their half of the preload onto broker 4, no producer record
// fails, and the throttle configs are removed (the run fails otherwise).
func TestBenchReassignTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kbroker and runs four node processes")
	}
	bin := testutil.BuildKbroker(t, t.TempDir())
	var out, errs bytes.Buffer
	code := Run([]string{"--mode", "reassign", "--kbroker", bin, "--dir", t.TempDir(),
		"--partitions", "4", "--preload-mb", "4", "--throttle-mb", "1", "--load-rate", "200", "--baseline", "500ms"}, &out, &errs)
	if code != 0 {
		t.Fatalf("bench --mode reassign exit %d\nstdout: %s\nstderr: %s", code, out.String(), errs.String())
	}
	t.Logf("stdout:\n%s", out.String())
	rows := 0
	for _, line := range strings.Split(out.String(), "\n") {
		m := reassignRowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		// Two of the four partitions, each about a quarter of 4 MB
		// (plus the producer's records).
		if m[2] != "2" {
			t.Errorf("%s moved %s partitions, want 2", m[1], m[2])
		}
		if mb, _ := strconv.ParseFloat(m[3], 64); mb < 1.9 || mb > 3 {
			t.Errorf("%s moved %s MB, want about 2", m[1], m[3])
		}
		if m[8] != "0" {
			t.Errorf("%s: %s producer records failed", m[1], m[8])
		}
	}
	if rows != 2 {
		t.Errorf("found %d move rows, want 2", rows)
	}
	for _, want := range []string{"ratio throttled/unthrottled MB/s: ", "throttle configs removed: ", "none (baseline)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
}
