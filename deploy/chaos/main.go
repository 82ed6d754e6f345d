package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Every nemesis the harness knows, in the order the summary lists them.
var allNemeses = []string{"kill-leader", "kill-controller", "bounce", "pause-leader", "isolate", "rolling-restart", "clock-jump"}

// extraNemeses are known but not run unless named or "all" is: disk-full
// needs root (a tmpfs per node) and the subprocess target.
var extraNemeses = []string{"disk-full"}

type config struct {
	duration    time.Duration
	seed        int64
	target      string
	security    string
	history     string
	nemeses     []string
	producers   int
	quiet       time.Duration
	kbroker     string
	composeFile string
	network     string
	partitions  int
	rate        int // records per second per producer
	// txnProducers is the number of transactional producers (-1 until
	// parsed: the target's default).
	txnProducers int
	eos          bool // the consume-transform-produce pipeline beside them
	keep         bool
	out          io.Writer
}

func parseFlags(args []string, out io.Writer) (*config, error) {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(out)
	c := &config{out: out}
	var nem string
	fs.DurationVar(&c.duration, "duration", 2*time.Minute, "how long to inject faults (every nemesis runs at least once)")
	fs.Int64Var(&c.seed, "seed", 0, "random seed (0: from the clock)")
	fs.StringVar(&c.target, "target", "subprocess", "subprocess (three local kbroker processes) or compose (deploy/docker-compose.yml)")
	fs.StringVar(&c.security, "security", secPlaintext, "subprocess target: plaintext, or sasl_ssl (TLS + SCRAM-SHA-512 for clients and between brokers, mutual TLS on the controller listener, ACLs on, encrypted gossip)")
	fs.StringVar(&c.history, "history", "", "JSONL history file (default: history.jsonl in the work directory)")
	fs.StringVar(&nem, "nemeses", strings.Join(allNemeses, ","), "comma-separated nemeses: "+strings.Join(allNemeses, ", ")+"; all adds "+strings.Join(extraNemeses, ", "))
	fs.IntVar(&c.producers, "producers", 3, "concurrent idempotent acks=all producers")
	fs.DurationVar(&c.quiet, "quiet", 3*time.Second, "quiet period between faults")
	fs.StringVar(&c.kbroker, "kbroker", "", "kbroker binary for --target subprocess (default: go build ./cmd/kbroker into the work directory)")
	fs.StringVar(&c.composeFile, "compose-file", "", "compose file for --target compose (default: deploy/docker-compose.yml of this module)")
	fs.StringVar(&c.network, "network", "deploy_kbroker", "compose network the isolate nemesis disconnects a container from")
	fs.IntVar(&c.partitions, "partitions", 6, "partitions of the chaos topic")
	fs.IntVar(&c.rate, "rate", 150, "records per second each producer hands over")
	fs.IntVar(&c.txnProducers, "txn-producers", -1, "transactional producers on their own topic, checked with read_committed (default: 2 for the subprocess target, 0 for compose)")
	fs.BoolVar(&c.eos, "eos", true, "with --txn-producers: also run a consume-transform-produce pipeline (GroupTransactSession) copying their topic to another, checked for exactly once")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory (data dirs, logs) even when every check passed")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.seed == 0 {
		c.seed = time.Now().UnixNano()
	}
	if c.target != "subprocess" && c.target != "compose" {
		return nil, fmt.Errorf("--target %q: want subprocess or compose", c.target)
	}
	if c.security != secPlaintext && c.security != secSASLSSL {
		return nil, fmt.Errorf("--security %q: want %s or %s", c.security, secPlaintext, secSASLSSL)
	}
	if c.security != secPlaintext && c.target != "subprocess" {
		return nil, fmt.Errorf("--security %s: only the subprocess target (the compose target runs deploy/docker-compose.yml as it is)", c.security)
	}
	if c.producers < 1 || c.producers > 64 {
		return nil, fmt.Errorf("--producers %d: want 1..64", c.producers)
	}
	if c.txnProducers < 0 {
		c.txnProducers = 2
		if c.target == "compose" {
			c.txnProducers = 0
		}
	}
	if c.txnProducers > 64 {
		return nil, fmt.Errorf("--txn-producers %d: want 0..64", c.txnProducers)
	}
	if c.partitions < 1 || c.partitions > 1000 {
		return nil, fmt.Errorf("--partitions %d: want 1..1000", c.partitions)
	}
	if c.rate < 1 || c.rate > 10000 {
		return nil, fmt.Errorf("--rate %d: want 1..10000", c.rate)
	}
	known := map[string]bool{}
	for _, n := range append(slices.Clone(allNemeses), extraNemeses...) {
		known[n] = true
	}
	for _, n := range strings.Split(nem, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if n == "all" {
			c.nemeses = append(c.nemeses, allNemeses...)
			c.nemeses = append(c.nemeses, extraNemeses...)
			continue
		}
		if !known[n] {
			return nil, fmt.Errorf("--nemeses: unknown nemesis %q (known: %s)", n, strings.Join(append(slices.Clone(allNemeses), extraNemeses...), ", "))
		}
		c.nemeses = append(c.nemeses, n)
	}
	return c, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	cfg.out = os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res := run(ctx, cfg)
	os.Exit(res.exitCode())
}
