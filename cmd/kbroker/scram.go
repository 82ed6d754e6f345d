package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/kbroker/kbroker/cluster"
	"github.com/kbroker/kbroker/security/sasl"
)

// bootstrapScram parses the --add-scram arguments and the lines of the
// --add-scram-file files. Errors never quote an argument: it may hold a
// password.
func bootstrapScram(args, files []string) ([]cluster.BootstrapScram, error) {
	type source struct{ arg, where string }
	var all []source
	for i, a := range args {
		all = append(all, source{a, fmt.Sprintf("--add-scram #%d", i+1)})
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--add-scram-file: %w", err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				all = append(all, source{line, fmt.Sprintf("--add-scram-file %s:%d", f, i+1)})
			}
		}
	}
	out := make([]cluster.BootstrapScram, 0, len(all))
	for _, s := range all {
		user, cred, err := sasl.ParseAddScram(s.arg)
		if err != nil {
			return nil, fmt.Errorf("%s: not MECHANISM=[name=NAME,password=PASSWORD] or the salted form (details withheld: the argument may contain a password)", s.where)
		}
		out = append(out, cluster.BootstrapScram{User: user, Credential: cred})
	}
	return out, nil
}
