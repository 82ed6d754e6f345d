package itest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// runCmd runs name args with stdin and a timeout and returns stdout and
// stderr; a non-zero exit fails the test.
func runCmd(t testing.TB, timeout time.Duration, stdin string, name string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s\nstdout (first 2000 bytes):\n%.2000s", name, strings.Join(args, " "), err, errb.String(), out.String())
	}
	return out.String(), errb.String()
}

func TestKcat(t *testing.T) {
	t.Parallel()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed (apt-get install kcat)")
	}
	n := pick(200, 1000)
	b := startBroker(t, t.TempDir())

	cases := []struct {
		name  string
		extra []string
	}{
		{"plain", nil},
		{"gzip", []string{"-z", "gzip"}},
		{"snappy", []string{"-z", "snappy"}},
		{"lz4", []string{"-z", "lz4"}},
		{"zstd", []string{"-z", "zstd"}},
		{"idempotent", []string{"-X", "enable.idempotence=true"}},
		{"idempotent-zstd", []string{"-z", "zstd", "-X", "enable.idempotence=true"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			topic := topicName(t)
			createTopic(t, b, topic, 1, nil)
			lines := make([]string, n)
			for i := range lines {
				lines[i] = fmt.Sprintf("%s-line-%05d", tc.name, i)
			}
			input := strings.Join(lines, "\n") + "\n"

			args := append([]string{"-b", b.addr, "-t", topic, "-P"}, tc.extra...)
			_, stderr := runCmd(t, 60*time.Second, input, kcat, args...)
			if strings.Contains(stderr, "ERROR") || strings.Contains(stderr, "failed") {
				t.Fatalf("kcat -P reported errors:\n%s", stderr)
			}

			out, _ := runCmd(t, 60*time.Second, "", kcat, "-b", b.addr, "-t", topic, "-C", "-o", "beginning", "-e", "-q")
			got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(got) != n {
				t.Errorf("kcat -C read %d lines, want %d", len(got), n)
			}
			for i := 0; i < len(got) && i < n; i++ {
				if got[i] != lines[i] {
					t.Fatalf("kcat -C line %d = %q, want %q", i, got[i], lines[i])
				}
			}

			// kcat does not print offsets on produce; on a single
			// partition, line i must be at offset i.
			a := newAcks()
			for i, l := range lines {
				a.ack(0, int64(i), l)
			}
			checkLog(t, a, consumeAll(t, b, topic))
		})
	}

	t.Run("list", func(t *testing.T) {
		topic := topicName(t)
		createTopic(t, b, topic, 2, nil)
		out, _ := runCmd(t, 30*time.Second, "", kcat, "-b", b.addr, "-L")
		wantBroker := regexp.MustCompile(`broker 1 at ` + regexp.QuoteMeta(b.addr))
		if !wantBroker.MatchString(out) {
			t.Errorf("kcat -L does not list %q:\n%s", wantBroker, out)
		}
		wantTopic := fmt.Sprintf("topic %q with 2 partitions", topic)
		if !strings.Contains(out, wantTopic) {
			t.Errorf("kcat -L does not list %q:\n%s", wantTopic, out)
		}
		for p := 0; p < 2; p++ {
			wantPart := fmt.Sprintf("partition %d, leader 1, replicas: 1, isrs: 1", p)
			if !strings.Contains(out, wantPart) {
				t.Errorf("kcat -L does not list %q:\n%s", wantPart, out)
			}
		}
	})
}
