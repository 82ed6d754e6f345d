package bench

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testutil"
)

func TestParseScaleCounts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		ok   bool
	}{
		{"1000,10000", []int{1000, 10000}, true},
		{" 50 ", []int{50}, true},
		{"0", nil, false},
		{"1000,x", nil, false},
		{"", nil, false},
	} {
		got, err := parseCounts(tc.in)
		if (err == nil) != tc.ok || tc.ok && !slices.Equal(got, tc.want) {
			t.Errorf("parseCounts(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
	if _, err := parseBenchFlags([]string{"--mode", "scale", "--scale-partitions", "100,-1"}, &bytes.Buffer{}); err == nil {
		t.Error("--scale-partitions 100,-1 accepted")
	}
}

// The table gives each count's figure and its ratio to the first count's;
// per-replica figures are growth over the empty cluster.
func TestPrintScaleRatios(t *testing.T) {
	r1 := scaleResult{partitions: 1000, propPartitions: 1000, created: 4 * time.Second,
		rssKiB: [3]int64{2048, 2048, 2048}, baseRSSKiB: [3]int64{1024, 1024, 1024},
		fds: [3]int64{1020, 1020, 1020}, baseFDs: [3]int64{20, 20, 20}}
	r2 := r1
	r2.partitions, r2.created = 10000, 40*time.Second
	r2.fds = [3]int64{520, 520, 520} // fewer descriptors for more partitions: the cache
	var out bytes.Buffer
	printScale(&out, []scaleResult{r1, r2})
	rows := map[string][]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if i := strings.Index(line, "  "); i > 0 {
			rows[strings.TrimSpace(line[:i])] = strings.Fields(line[i:])
		}
	}
	check := func(label string, want ...string) {
		t.Helper()
		got := rows[label]
		if len(got) < len(want) || !slices.Equal(got[len(got)-len(want):], want) {
			t.Errorf("row %q = %v, want it to end with %v\n%s", label, got, want, out.String())
		}
	}
	check("create: led, full ISR on every broker", "4.000", "40.000", "10.00")
	check("RSS per replica over empty node", "1.024", "0.102", "0.10")
	check("open fds per replica over empty node", "1.000", "0.050", "0.05")
}

// TestBenchScaleSmall runs the scale mode end to end at 50 partitions
// (and a 50-partition propagation topic) on three node processes: every
// row of the table is measured.
func TestBenchScaleSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three broker processes")
	}
	dir := t.TempDir()
	bin := testutil.BuildKbroker(t, dir)
	var out, errs bytes.Buffer
	c := benchConfig{mode: "scale", scaleCounts: []int{50}, idleWindow: 2 * time.Second, scaleProp: 50,
		nodeBin: bin, dir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := runBench(ctx, c, &out, &errs); err != nil {
		t.Fatalf("bench --mode scale: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errs.String())
	}
	t.Logf("\n%s", out.String())
	row := regexp.MustCompile(`(?m)^(\S.*?)\s{2,}\S*\s+(-?[\d.]+)$`)
	rows := row.FindAllStringSubmatch(out.String(), -1)
	if len(rows) < 14 {
		t.Fatalf("%d rows in the table, want 14:\n%s", len(rows), out.String())
	}
	for _, m := range rows {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatalf("row %q: %v", m[1], err)
		}
		switch {
		case strings.HasPrefix(m[1], "create: led"), strings.HasPrefix(m[1], "propagate"),
			strings.HasPrefix(m[1], "RSS per node"), strings.HasPrefix(m[1], "open fds per node"),
			strings.HasPrefix(m[1], "restart all three: led"):
			if v <= 0 {
				t.Errorf("row %q = %v, want a measurement above 0", m[1], v)
			}
		}
	}
}
