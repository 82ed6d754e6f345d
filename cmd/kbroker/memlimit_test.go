package main

import "testing"

func TestParseCgroupMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"max\n", 0, false},
		{"536870912\n", 536870912, true},
		{"9223372036854771712\n", 0, false}, // cgroup v1 "unlimited"
		{"", 0, false},
		{"garbage", 0, false},
		{"0", 0, false},
	} {
		got, ok := parseCgroupMemoryLimit(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseCgroupMemoryLimit(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
