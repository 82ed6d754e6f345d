package cliflag

import (
	"flag"
	"io"
	"slices"
	"testing"
)

func TestStringListKeepsCommas(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var sets StringList
	fs.Var(&sets, "set", "")
	if err := fs.Parse([]string{"--set", "a=1,2", "--set", "b=3"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a=1,2", "b=3"}; !slices.Equal(sets, want) {
		t.Errorf("got %q, want %q", sets, want)
	}
}

func TestSplit(t *testing.T) {
	for in, want := range map[string][]string{
		"":                    nil,
		" , ,":                nil,
		"a:9092":              {"a:9092"},
		" a:9092 ,, b:9092 ,": {"a:9092", "b:9092"},
		"x=1,y=2":             {"x=1", "y=2"},
	} {
		if got := Split(in); !slices.Equal(got, want) {
			t.Errorf("Split(%q) = %q, want %q", in, got, want)
		}
	}
}
