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
		})
	}
}

// The README documents every supported config key.
func TestReadmeListsEveryConfigKey(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range config.Keys() {
		if !bytes.Contains(readme, []byte("`"+k.Name+"`")) {
			t.Errorf("README.md does not list %s", k.Name)
		}
	}
	for _, name := range config.IgnoredKeyNames() {
		if !bytes.Contains(readme, []byte("`"+name+"`")) {
			t.Errorf("README.md does not list the ignored Kafka key %s", name)
		}
	}
}
