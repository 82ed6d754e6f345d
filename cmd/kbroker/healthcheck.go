package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/cliflag"
)

// healthcheck exits 0 when the local broker, configured as `serve` would
// be (same file, KBROKER_* env and --set flags), answers Metadata on its
// inter-broker listener and lists itself there: it is registered,
// unfenced and serving. Docker's HEALTHCHECK and Kubernetes probes run it.
func healthcheck(args, env []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config", "", "the server.properties file the broker runs with")
	var sets cliflag.StringList
	fs.Var(&sets, "set", "a config key=value, as given to serve (repeatable)")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg, err := config.Load(*configFile, env, sets)
	if err != nil {
		fmt.Fprintf(stderr, "kbroker healthcheck: %v\n", err)
		return 2
	}
	if err := checkHealth(cfg, *timeout); err != nil {
		fmt.Fprintf(stderr, "kbroker healthcheck: unhealthy: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "broker %d is registered, unfenced and serving\n", cfg.NodeID)
	return 0
}

func checkHealth(cfg config.Config, timeout time.Duration) error {
	if !cfg.IsBroker() {
		return errors.New("process.roles has no broker role: nothing to check on a broker listener")
	}
	l, ok := cfg.Listener(cfg.InterBrokerListenerName)
	if !ok {
		return fmt.Errorf("no listener %s", cfg.InterBrokerListenerName)
	}
	host := l.Host
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	addr := fmt.Sprintf("%s:%d", host, l.Port)
	// A secure inter-broker listener is reached as the broker's own
	// follower fetchers reach it; its certificate names the advertised
	// host, not the loopback address dialed.
	serverName := host
	if adv, ok := advertised(cfg, l.Name); ok {
		serverName = adv
	}
	secOpts, err := cluster.InterBrokerClientOpts(&cfg, serverName)
	if err != nil {
		return err
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTimeout(timeout), kgo.RequestRetries(0)}, secOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // brokers only
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("metadata from %s: %w", addr, err)
	}
	for _, b := range resp.Brokers {
		if b.NodeID == cfg.NodeID {
			return nil
		}
	}
	return fmt.Errorf("broker %d is not among the unfenced brokers %s reports", cfg.NodeID, addr)
}

// advertised is the advertised host of listener name.
func advertised(cfg config.Config, name string) (string, bool) {
	for _, a := range cfg.AdvertisedListeners {
		if a.Name == name && a.Host != "" {
			return a.Host, true
		}
	}
	return "", false
}
