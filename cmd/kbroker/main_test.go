package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/config"
)

// Bad configuration stops the broker at start with a message naming the
// key and where it came from.
func TestServeRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/server.properties"
	if err := os.WriteFile(file, []byte("# comment\nnode.id=1\nlog.segment.bytes=many\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"unknown key flag", []string{"serve", "--set", "log.dirz=/tmp/x"}, nil, []string{`"log.dirz"`, "--set"}},
		{"bad int env", []string{"serve"}, []string{"KBROKER_NUM_PARTITIONS=abc"}, []string{"num.partitions", "KBROKER_NUM_PARTITIONS"}},
		{"bad value file", []string{"serve", "--config", file}, nil, []string{"log.segment.bytes", "server.properties:3"}},
		{"bad roles", []string{"--set", "process.roles=everything"}, nil, []string{"process.roles"}},
		{"unknown command", []string{"frobnicate"}, nil, []string{`unknown command "frobnicate"`}},
		{"SSL without keystore", []string{"serve", "--set", "listener.security.protocol.map=PLAINTEXT:SSL,CONTROLLER:PLAINTEXT"}, nil,
			[]string{"listener PLAINTEXT", "ssl.keystore.location"}},
		{"SASL without mechanisms", []string{"serve", "--set", "listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"}, nil,
			[]string{"listener PLAINTEXT", "sasl.enabled.mechanisms"}},
		{"malformed --add-scram", []string{"serve", "--add-scram", "SCRAM-SHA-512=name=admin,password=hunter2"}, nil,
			[]string{"--add-scram #1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(c.args, c.env, &stderr); code != 2 {
				t.Fatalf("exit code %d, want 2; stderr: %s", code, stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q does not mention %q", stderr.String(), w)
				}
			}
			if strings.Contains(stderr.String(), "hunter2") {
				t.Errorf("stderr shows a password: %q", stderr.String())
			}
		})
	}
}

// The README's key index names every supported config key, and the
// reference table of docs/CONFIGURATION.md has a row for each.
func TestReadmeListsEveryConfigKey(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	reference, err := os.ReadFile("../../docs/CONFIGURATION.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range config.Keys() {
		if !bytes.Contains(readme, []byte("`"+k.Name+"`")) {
			t.Errorf("README.md does not list %s", k.Name)
		}
		if !bytes.Contains(reference, []byte("\n| `"+k.Name+"` |")) {
			t.Errorf("docs/CONFIGURATION.md has no table row for %s", k.Name)
		}
	}
	for _, name := range config.IgnoredKeyNames() {
		if !bytes.Contains(readme, []byte("`"+name+"`")) {
			t.Errorf("README.md does not list the ignored Kafka key %s", name)
		}
	}
}
