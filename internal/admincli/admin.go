package admincli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/cliflag"
)

const adminUsage = `usage: kbroker admin <command> [flags]

Commands (each takes --bootstrap-server H:P[,H:P], --output table|json and
--command-config FILE for a secured listener):
  topics create   --topic T [--partitions N] [--replication-factor R] [--config k=v]...
  topics describe [--topic T]...
  topics alter    --topic T --partitions N
  topics delete   --topic T...
  topics list
  configs describe --entity-type topics|brokers [--entity-name N]
  configs alter    --entity-type topics|brokers [--entity-name N] [--add-config k=v,...] [--delete-config k,...]
  groups list
  groups describe GROUP... | --group G...
  groups delete   --group G...
  groups reset-offsets --group G [--topic T]... (--to-earliest|--to-latest|--to-offset N) [--execute]
  elect-leaders   (--preferred|--unclean) [--topic T [--partition P]]
  log-dirs describe [--broker B]... [--topic T]...
  log-dirs move   --broker B --dir D --topic T [--partition P]...
  reassign --generate --brokers 1,2,3 --topics t1,t2
  reassign --execute FILE | --verify FILE | --cancel FILE
  brokers list
  brokers unregister --id N   (a stopped broker: fenced, gone for good)
  quorum describe             (the metadata quorum: leader, voters, observers, lag)
  quorum add-voter --id N [--controller-listener [NAME://]H:P]
  quorum remove-voter --id N
  acls list   [--principal P] [RESOURCE] [--operation O]... [--resource-pattern-type literal|prefixed|match|any]
  acls create --principal User:U --operation O... (--allow|--deny) [--host H] RESOURCE [--resource-pattern-type literal|prefixed]
  acls delete [--principal P] [--operation O]... [--allow|--deny] [--host H] RESOURCE [--resource-pattern-type ...]
              RESOURCE is --topic T | --group G | --cluster | --transactional-id X
  users describe [--user U]...   (SCRAM mechanisms and iterations, never secrets)
  users alter  --user U --mechanism SCRAM-SHA-256|SCRAM-SHA-512 [--iterations N] --password-file F|-
  users delete --user U --mechanism SCRAM-SHA-256|SCRAM-SHA-512
  features describe          (supported and finalized feature levels, as kafka-features.sh)
  features upgrade   --feature NAME=LEVEL... [--dry-run]
  features downgrade --feature NAME=LEVEL... [--unsafe] [--dry-run]
  features disable   --feature NAME... [--unsafe] [--dry-run]

Brokers without a name in configs mean the cluster-wide default.

--command-config FILE holds Kafka client keys, as for Kafka's tools:
  security.protocol=PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL
  sasl.mechanism=PLAIN|SCRAM-SHA-256|SCRAM-SHA-512
  sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";
    (or sasl.username=u and sasl.password=p)
  ssl.truststore.location=ca.pem (ssl.truststore.type=PEM) or ssl.ca.location=ca.pem
  ssl.keystore.location=client.pem (key and chain), or ssl.certificate.location + ssl.key.location
  ssl.endpoint.identification.algorithm=   (empty: no host name check)`

// adminCommand is one `kbroker admin` command: its flags are added to fs
// before parsing, then run is called with a connected client.
type adminCommand struct {
	flags func(fs *flag.FlagSet)
	// args, when set, takes the arguments that are not flags (flags may
	// come before, between and after them); otherwise any is a usage
	// error.
	args func(args []string) error
	run  func(ctx context.Context, a *adminEnv) error
}

// adminEnv is what every command gets: the client and the output.
type adminEnv struct {
	adm  *kadm.Client
	cl   *kgo.Client // for the requests kadm has no call for
	out  io.Writer
	json bool
}

// adminCommands maps "topics create" and the like to their command.
func adminCommands() map[string]func() adminCommand {
	return map[string]func() adminCommand{
		"topics create":        topicsCreate,
		"topics describe":      topicsDescribe,
		"topics alter":         topicsAlter,
		"topics delete":        topicsDelete,
		"topics list":          topicsList,
		"configs describe":     configsDescribe,
		"configs alter":        configsAlter,
		"groups list":          groupsList,
		"groups describe":      groupsDescribe,
		"groups delete":        groupsDelete,
		"groups reset-offsets": groupsResetOffsets,
		"elect-leaders":        electLeadersCmd,
		"log-dirs describe":    logDirsDescribe,
		"log-dirs move":        logDirsMove,
		"reassign":             reassignCmd,
		"brokers list":         brokersList,
		"brokers unregister":   brokersUnregister,
		"quorum describe":      quorumDescribe,
		"quorum add-voter":     quorumAddVoter,
		"quorum remove-voter":  quorumRemoveVoter,
		"acls list":            aclsList,
		"acls create":          aclsCreate,
		"acls delete":          aclsDelete,
		"users describe":       usersDescribe,
		"users alter":          usersAlter,
		"users delete":         usersDelete,
		"features describe":    featuresDescribe,
		"features upgrade":     featuresUpgrade,
		"features downgrade":   featuresDowngrade,
		"features disable":     featuresDisable,
	}
}

// Run runs `kbroker admin ...`. Exit codes: 0 done, 1 the cluster
// refused or failed, 2 bad usage.
func Run(args []string, stdout, stderr io.Writer) int {
	cmds := adminCommands()
	var name string
	var mk func() adminCommand
	for n := 2; n >= 1 && mk == nil; n-- {
		if len(args) >= n {
			name = strings.Join(args[:n], " ")
			if m, ok := cmds[name]; ok {
				mk, args = m, args[n:]
			}
		}
	}
	if mk == nil {
		if len(args) > 0 && args[0] != "help" && args[0] != "-h" && args[0] != "--help" {
			fmt.Fprintf(stderr, "kbroker admin: unknown command %q\n", strings.Join(args[:min(len(args), 2)], " "))
			fmt.Fprintln(stderr, adminUsage)
			return 2
		}
		fmt.Fprintln(stderr, adminUsage)
		return 0
	}
	cmd := mk()
	fs := flag.NewFlagSet("admin "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootstrap := fs.String("bootstrap-server", "localhost:9092", "comma-separated host:port of brokers to bootstrap from")
	output := fs.String("output", "table", "table or json")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	commandConfig := fs.String("command-config", "", "a properties file of Kafka client security keys (security.protocol, sasl.*, ssl.*)")
	cmd.flags(fs)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		if cmd.args == nil {
			fmt.Fprintf(stderr, "kbroker admin %s: unexpected argument %q\n", name, fs.Arg(0))
			return 2
		}
		// Parse stops at the first argument; flags may follow it.
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if cmd.args != nil {
		if err := cmd.args(positional); err != nil {
			fmt.Fprintf(stderr, "kbroker admin %s: %v\n", name, err)
			return 2
		}
	}
	if *output != "table" && *output != "json" {
		fmt.Fprintf(stderr, "kbroker admin %s: --output must be table or json, not %q\n", name, *output)
		return 2
	}
	brokers := cliflag.Split(*bootstrap)
	if len(brokers) == 0 {
		fmt.Fprintf(stderr, "kbroker admin %s: --bootstrap-server is empty\n", name)
		return 2
	}
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...)}
	if *commandConfig != "" {
		sec, err := loadCommandConfig(*commandConfig)
		if err != nil {
			fmt.Fprintf(stderr, "kbroker admin %s: %v\n", name, err)
			return 2
		}
		opts = append(opts, sec...)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintf(stderr, "kbroker admin %s: %v\n", name, err)
		return 2
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	env := &adminEnv{adm: kadm.NewClient(cl), cl: cl, out: stdout, json: *output == "json"}
	if err := cmd.run(ctx, env); err != nil {
		fmt.Fprintf(stderr, "kbroker admin %s: %v\n", name, err)
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

// usageError is a mistake in the flags, found after parsing.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// emit prints v as indented JSON (--output json) or the table (default).
func (a *adminEnv) emit(v any, header []string, rows [][]string) error {
	if a.json {
		enc := json.NewEncoder(a.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return writeTable(a.out, header, rows)
}

// writeTable prints rows under header in aligned columns.
func writeTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// list32 parses "1,2,3".
func list32(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, int32(v))
	}
	return out, nil
}

// join32 prints 1,2,3.
func join32(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// commaList collects a repeatable flag whose values may also be
// comma-separated: --topic a --topic b,c.
type commaList []string

func (s *commaList) String() string { return strings.Join(*s, ",") }
func (s *commaList) Set(v string) error {
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			*s = append(*s, f)
		}
	}
	return nil
}

// errText is an error as a table cell or JSON string: "" for none.
func errText(err error, msg string) string {
	if err == nil {
		return ""
	}
	if msg != "" && !strings.Contains(err.Error(), msg) {
		return err.Error() + ": " + msg
	}
	return err.Error()
}

// firstErr returns a summary error when any of errs is not nil, so the
// command exits 1 after printing every result.
func firstErr(what string, errs []error) error {
	n := 0
	var first error
	for _, e := range errs {
		if e != nil {
			if first == nil {
				first = e
			}
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d %s failed, first: %w", n, len(errs), what, first)
}
