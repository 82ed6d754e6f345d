package itest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runCmd runs name args with stdin and a timeout and returns stdout and
// stderr; a non-zero exit fails the test.
// runCmd runs name args with stdin and a timeout and returns stdout and
// stderr; a non-zero exit or a timeout fails the test.
func runCmd(t testing.TB, timeout time.Duration, stdin string, name string, args ...string) (string, string) {
	t.Helper()
	out, errOut, err := runCmdErr(timeout, stdin, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\nstderr (last 1500 bytes):\n%s\nstdout (first 300 bytes):\n%.300s", name, strings.Join(args, " "), err, tail(errOut, 1500), out)
	}
	return out, errOut
}

// runCmdErr is runCmd returning the error instead of failing.
func runCmdErr(timeout time.Duration, stdin string, name string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v: %w", timeout, errors.Join(ctx.Err(), err))
	}
	return out.String(), errb.String(), err
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
			t.Parallel()
			topic := topicName(t)
			createTopic(t, b, topic, 1, nil)
			lines := make([]string, n)
			for i := range lines {
				lines[i] = fmt.Sprintf("%s-line-%05d", tc.name, i)
			}
			input := strings.Join(lines, "\n") + "\n"

			args := append([]string{"-b", b.addr, "-t", topic, "-P"}, tc.extra...)
			_, stderr := runCmd(t, 30*time.Second, input, kcat, args...)
			if strings.Contains(stderr, "ERROR") || strings.Contains(stderr, "failed") {
				t.Fatalf("kcat -P reported errors:\n%s", stderr)
			}

			// kcat does not print offsets on produce; on a single
			// partition, line i must be at offset i.
			a := newAcks()
			for i, l := range lines {
				a.Ack(0, int64(i), l)
			}
			checkLog(t, a, consumeAll(t, b, topic))

			// -c n: exit after n messages, so this checks the codec
			// round trip even where end-of-partition detection fails
			// (that is TestKcat/consume-to-end).
			out, _ := runCmd(t, 20*time.Second, "", kcat, "-b", b.addr, "-t", topic, "-C", "-o", "beginning", "-c", strconv.Itoa(n), "-e", "-q")
			checkLines(t, out, lines)
		})
	}

	// kcat -C -e exits when it sees the end of the partition: an empty
	// fetch at the high watermark.
	t.Run("consume-to-end", func(t *testing.T) {
		topic := topicName(t)
		createTopic(t, b, topic, 1, nil)
		lines := make([]string, n)
		for i := range lines {
			lines[i] = fmt.Sprintf("end-line-%05d", i)
		}
		runCmd(t, 30*time.Second, strings.Join(lines, "\n")+"\n", kcat, "-b", b.addr, "-t", topic, "-P")
		args := []string{"-b", b.addr, "-t", topic, "-C", "-o", "beginning", "-e"}
		out, stderr, err := runCmdErr(10*time.Second, "", kcat, args...)
		if err != nil {
			t.Fatalf("kcat %s: %v\nstderr (first 600 bytes):\n%.600s", strings.Join(args, " "), err, stderr)
		}
		checkLines(t, out, lines)
	})

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

// checkLines checks that out is exactly lines, one per line, in order.
func checkLines(t testing.TB, out string, lines []string) {
	t.Helper()
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != len(lines) {
		t.Errorf("kcat -C read %d lines, want %d", len(got), len(lines))
	}
	for i := 0; i < len(got) && i < len(lines); i++ {
		if got[i] != lines[i] {
			t.Fatalf("kcat -C line %d = %q, want %q", i, got[i], lines[i])
		}
	}
}
