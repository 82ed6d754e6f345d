package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestBenchCompareAndFailoverFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		bad  string // the flag named in the error; "" is valid
	}{
		{"defaults", nil, ""},
		{"replication factor 1", []string{"--replication-factor", "1"}, ""},
		{"replication factor 4 on three nodes", []string{"--replication-factor", "4"}, "replication-factor"},
		{"replication factor 0", []string{"--replication-factor", "0"}, "replication-factor"},
		{"settle", []string{"--mode", "failover", "--settle", "5s"}, ""},
		{"negative settle", []string{"--mode", "failover", "--settle", "-1s"}, "settle"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			_, err := parseBenchFlags(c.args, &stderr)
			switch {
			case c.bad == "" && err != nil:
				t.Fatalf("parseBenchFlags(%q): %v", c.args, err)
			case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
				t.Fatalf("parseBenchFlags(%q) = %v, want an error naming --%s", c.args, err, c.bad)
			}
		})
	}
	c, err := parseBenchFlags(nil, &bytes.Buffer{})
	if err != nil || c.rf != 3 || c.settle != 14*time.Second {
		t.Fatalf("defaults: rf %d, settle %v, %v; want 3, 14s", c.rf, c.settle, err)
	}
}
