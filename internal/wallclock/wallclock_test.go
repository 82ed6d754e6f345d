package wallclock

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNowFollowsOffset(t *testing.T) {
	defer SetOffset(0)
	for _, d := range []time.Duration{0, 2 * time.Hour, -90 * time.Minute} {
		SetOffset(d)
		before := time.Now()
		got := Now()
		after := time.Now()
		if got.Before(before.Round(0).Add(d)) || got.After(after.Round(0).Add(d)) {
			t.Errorf("offset %v: Now %v not within [%v, %v] shifted", d, got, before, after)
		}
		if strings.Contains(got.String(), "m=") {
			t.Errorf("offset %v: Now %v has a monotonic reading", d, got)
		}
		if ms := NowMs(); ms < before.Add(d).UnixMilli() {
			t.Errorf("offset %v: NowMs %d before %d", d, ms, before.Add(d).UnixMilli())
		}
		start := time.Now()
		if s := Stamp(start); !s.Equal(start.Round(0).Add(d)) {
			t.Errorf("offset %v: Stamp %v, want %v", d, s, start.Add(d))
		}
	}
}

func TestLoadOffset(t *testing.T) {
	defer SetOffset(0)
	dir := t.TempDir()
	path := filepath.Join(dir, "clock")
	cases := []struct {
		name    string
		content *string
		want    time.Duration
		err     bool
	}{
		{"missing file", nil, 0, false},
		{"forwards", ptr("2h\n"), 2 * time.Hour, false},
		{"backwards", ptr(" -45m "), -45 * time.Minute, false},
		{"empty", ptr(""), 0, false},
		{"garbage", ptr("soon"), 0, true},
		{"too far", ptr("1000000h"), 0, true},
		{"too long", ptr(strings.Repeat("1", 100) + "s"), 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			SetOffset(time.Minute) // what a failed load must leave alone
			_ = os.Remove(path)
			if tc.content != nil {
				if err := os.WriteFile(path, []byte(*tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := LoadOffset(path)
			if tc.err {
				if !errors.Is(err, ErrBadOffset) {
					t.Fatalf("err %v, want ErrBadOffset", err)
				}
				if Offset() != time.Minute {
					t.Fatalf("a bad file changed the offset to %v", Offset())
				}
				return
			}
			if err != nil || got != tc.want || Offset() != tc.want {
				t.Fatalf("LoadOffset = %v, %v; Offset %v; want %v", got, err, Offset(), tc.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }
