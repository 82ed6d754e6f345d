package itest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// franz-go's own share group tests (its pkg/kgo share_test.go, at the
// version go.mod requires) against a 3-node kbroker cluster:
// TestShareGroupETL (a two-level share group pipeline with releases,
// rejects, short-lived consumers and rebalances), TestShareGroupAckOnClose
// and TestShareGroupOffsetsAdmin. The module cache is read-only, so the
// module is copied to a temporary directory and its tests run there with
// the environment franz-go's helpers_test.go reads: KGO_SEEDS,
// KGO_TEST_RF and KGO_TEST_RECORDS (TestShareGroupETL's record count:
// franz-go's default is 500000; KB_TEST_KGO_SHARE_RECORDS overrides the
// smaller default here, so the run fits a shared CI machine).
//
// The tests skip themselves when the broker lacks ShareFetch v2 and
// ShareAcknowledge v2; a skip fails here.

const (
	franzModule      = "github.com/twmb/franz-go"
	franzShareTests  = `^(TestShareGroupETL|TestShareGroupAckOnClose|TestShareGroupOffsetsAdmin)$`
	franzShareRecord = "20000"
)

func TestFranzGoShareSuite(t *testing.T) {
	if testing.Short() && os.Getenv("KB_TEST_KGO_SHARE") == "" {
		t.Skip("franz-go's share tests: not in -short runs")
	}
	src := franzModuleDir(t)
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
	if err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	}); err != nil {
		t.Fatal(err)
	}

	c := startCluster(t, 3, "group.initial.rebalance.delay.ms=0")
	var seeds []string
	for _, b := range c.brokers {
		seeds = append(seeds, b.addr)
	}
	records := os.Getenv("KB_TEST_KGO_SHARE_RECORDS")
	if records == "" {
		records = franzShareRecord
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-json", "-count=1", "-timeout", "12m", "-run", franzShareTests, "./pkg/kgo")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"KGO_SEEDS="+strings.Join(seeds, ","),
		"KGO_TEST_RF=3",
		"KGO_TEST_RECORDS="+records,
		"GOFLAGS=-mod=mod",
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	results := map[string]string{}
	output := map[string]*strings.Builder{}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e kafkaGoEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Action {
		case "output":
			if output[e.Test] == nil {
				output[e.Test] = &strings.Builder{}
			}
			output[e.Test].WriteString(e.Output)
		case "pass", "fail", "skip":
			if e.Test != "" {
				results[e.Test] = e.Action
			}
		}
	}
	waitErr := cmd.Wait()
	names := make([]string, 0, len(results))
	for name := range results {
		names = append(names, name)
	}
	sort.Strings(names)
	t.Logf("franz-go share tests (%s records) in %v: %v", records, time.Since(start).Round(time.Second), results)
	for _, want := range []string{"TestShareGroupETL", "TestShareGroupAckOnClose", "TestShareGroupOffsetsAdmin"} {
		switch results[want] {
		case "pass":
			t.Logf("%s:\n%s", want, outputTail(output[want], 12))
		case "":
			t.Errorf("%s did not run", want)
		default:
			t.Errorf("%s: %s\n%s", want, results[want], outputTail(output[want], 80))
		}
	}
	if waitErr != nil && t.Failed() {
		t.Logf("go test: %v\n%s\n%s", waitErr, stderr.String(), outputTail(output[""], 40))
		for _, b := range c.brokers {
			t.Logf("node %s log tail:\n%s", b.addr, b.logTail(30))
		}
	}
}

// franzModuleDir is franz-go's directory in the module cache, at the
// version go.mod requires.
func franzModuleDir(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", franzModule)
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", franzModule, err)
	}
	return strings.TrimSpace(string(out))
}
