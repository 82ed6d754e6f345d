package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kbroker/kbroker/cluster"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/admincli"
	"github.com/kbroker/kbroker/internal/bench"
	"github.com/kbroker/kbroker/internal/cliflag"
)

func main() {
	os.Exit(run(os.Args[1:], os.Environ(), os.Stderr))
}

func run(args, env []string, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(args, env, stderr)
	case "dump-log":
		return dumpLogCmd(args, os.Stdout, stderr)
	case "healthcheck":
		return healthcheck(args, env, os.Stdout, stderr)
	case "perf":
		return bench.Perf(args, os.Stdout, stderr)
	case "bench":
		return bench.Run(args, os.Stdout, stderr)
	case "tls":
		return tlsCmd(args, os.Stdout, stderr)
	case "admin":
		return admincli.Run(args, os.Stdout, stderr)
	case "help":
		usage(stderr)
		return 0
	default:
		fmt.Fprintf(stderr, "kbroker: unknown command %q\n", cmd)
		usage(stderr)
		return 2
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `usage: kbroker [serve] [flags]

Commands:
  serve     run a broker and/or controller (the default)
  dump-log  decode .log/.index/.timeindex files like kafka-dump-log.sh
  healthcheck  exit 0 if the local broker is registered, unfenced and serving
  perf      produce|consume load tests like kafka-producer/consumer-perf-test
  bench     a local 3-node cluster vs franz-go's kfake (throughput, latency), or kill -9 failover times
  tls init  write a private CA and PEM keys/certificates for brokers and a client
  admin     topics, configs, groups, elect-leaders, log-dirs, reassign, brokers, quorum,
            acls, users; --command-config for a secured cluster (kbroker admin help)

Run "kbroker serve --help" for the serve flags and every config key.`)
}

func serve(args, env []string, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return serveContext(ctx, args, env, stderr)
}

// serveContext is serve until ctx is done (SIGINT or SIGTERM in serve).
func serveContext(ctx context.Context, args, env []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config", "", "a server.properties file")
	var sets cliflag.StringList
	fs.Var(&sets, "set", "a config key=value (repeatable; wins over the file and KBROKER_* env vars)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logJSON := fs.Bool("log-json", false, "log JSON lines instead of text")
	faultClockFile := fs.String("fault-clock-file", "", "TEST ONLY: offset this broker's wall clock by the Go duration in FILE (e.g. -2h), re-read on SIGUSR2 (fault injection for the chaos harness; never in production)")
	var scrams, scramFiles cliflag.StringList
	fs.Var(&scrams, "add-scram", "a SCRAM credential as kafka-storage format takes it, e.g. 'SCRAM-SHA-512=[name=admin,password=admin-secret]' (repeatable; written to the metadata log only at the quorum's first start)")
	fs.Var(&scramFiles, "add-scram-file", "a file of --add-scram arguments, one per line (repeatable; keeps passwords off the command line)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kbroker serve [--config FILE] [--set key=value]... [--add-scram CRED]... [--add-scram-file FILE]... [--log-level L] [--log-json]")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\nConfig keys (also settable as KBROKER_<KEY>, upper case, dots as underscores):")
		for _, k := range config.Keys() {
			fmt.Fprintf(stderr, "  %-40s %-7s default %q\n      %s\n", k.Name, k.Scope, k.Default, k.Doc)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kbroker serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "kbroker: --log-level: %v\n", err)
		return 2
	}
	opts := &slog.HandlerOptions{Level: level}
	var handler slog.Handler = slog.NewTextHandler(stderr, opts)
	if *logJSON {
		handler = slog.NewJSONHandler(stderr, opts)
	}
	logger := slog.New(handler)

	cfg, err := config.Load(*configFile, env, sets)
	if err != nil {
		fmt.Fprintf(stderr, "kbroker: %v\n", err)
		return 2
	}
	if w := cfg.IgnoredWarning(); w != "" {
		logger.Warn(w)
	}
	setMemoryLimit(env, logger)
	creds, err := bootstrapScram(scrams, scramFiles)
	if err != nil {
		fmt.Fprintf(stderr, "kbroker: %v\n", err)
		return 2
	}
	if *faultClockFile != "" {
		fctx, cancel := context.WithCancel(ctx)
		fc, err := startFaultClock(fctx, *faultClockFile, logger)
		if err != nil {
			cancel()
			fmt.Fprintf(stderr, "kbroker: --fault-clock-file: %v\n", err)
			return 2
		}
		defer fc.stop()
		defer cancel()
	}
	node, err := cluster.NewNode(cfg, logger, cluster.WithBootstrapScram(creds...))
	if err != nil {
		fmt.Fprintf(stderr, "kbroker: %v\n", err)
		return 2
	}
	if err := node.Run(ctx); err != nil {
		logger.Error("kbroker failed", "err", err)
		return 1
	}
	return 0
}
