package errcode

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestErrorMessageCarriesNoPaths(t *testing.T) {
	_, openErr := os.Open("/var/lib/kbroker/orders-3/00000000000000000000.log")
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("create partition: %w", openErr), "create partition: open <path>: no such file or directory"},
		{errors.New("mkdir ./data/t-0: too many open files"), "mkdir <path>: too many open files"},
		{errors.New("topic orders has 3 partitions, asked for 2"), "topic orders has 3 partitions, asked for 2"},
		{errors.New("cleanup.policy=compact,delete is fine"), "cleanup.policy=compact,delete is fine"},
	}
	for _, tc := range cases {
		got := *Message(tc.err)
		if got != tc.want {
			t.Errorf("Message(%q) = %q, want %q", tc.err, got, tc.want)
		}
		if strings.Contains(got, "/") {
			t.Errorf("message %q still has a path", got)
		}
	}
}
