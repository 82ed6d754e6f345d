package config

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// README's "Ignored Kafka keys" line lists exactly the keys the broker
// accepts and ignores: a key implemented later leaves both at once.
func TestReadmeListsIgnoredKeys(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Ignored Kafka keys: ") {
			line = l
		}
	}
	if line == "" {
		t.Fatal(`README has no "Ignored Kafka keys: " line`)
	}
	var listed []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(line, -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(listed)
	want := IgnoredKeyNames()
	if !slices.Equal(listed, want) {
		t.Errorf("README's ignored keys differ from the code's.\nREADME: %v\ncode:   %v\nthe line should read:\nIgnored Kafka keys: `%s`.",
			listed, want, strings.Join(want, "`, `"))
	}
}
