package kafkaapi

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/cluster/server"
	"github.com/kbroker/kbroker/internal/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRegisterTwicePanics(t *testing.T) {
	table := map[int16]apiSpec{}
	h := func(*Handlers, context.Context, *server.RequestContext, kmsg.Request) (kmsg.Response, error) {
		return nil, nil
	}
	registerIn(table, apiSpec{key: 3, min: 0, max: 12, handle: h})
	for _, tc := range []struct {
		name string
		spec apiSpec
	}{
		{"duplicate key", apiSpec{key: 3, min: 0, max: 1, handle: h}},
		{"min above max", apiSpec{key: 4, min: 2, max: 1, handle: h}},
		{"negative min", apiSpec{key: 5, min: -1, max: 1, handle: h}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("register did not panic")
				}
			}()
			registerIn(table, tc.spec)
		})
	}
}

// Each api_NN_name.go file registers key NN, and its header comment names
// the API and key without restating the version range, which lives only in
// the register call.
func TestHandlerFilesRegisterTheirKey(t *testing.T) {
	files, err := filepath.Glob("api_*.go")
	if err != nil {
		t.Fatal(err)
	}
	fileName := regexp.MustCompile(`^api_(\d+)_[a-z_]+\.go$`)
	header := regexp.MustCompile(`^// (\w+) \(key (\d+)\)[.,]`)
	versionRange := regexp.MustCompile(`\bv\d+\s*[–-]\s*\d+\b|\bv\d+\.`)
	seen := map[int16]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		m := fileName.FindStringSubmatch(f)
		if m == nil {
			t.Errorf("%s: name is not api_NN_name.go", f)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		key := int16(n)
		seen[key] = true
		if _, ok := registry[key]; !ok {
			t.Errorf("%s: key %d is not registered", f, key)
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if c := strings.Count(string(src), "register(apiSpec{key: "+strconv.Itoa(n)+","); c != 1 {
			t.Errorf("%s: %d register calls for key %d, want 1", f, c, key)
		}
		lines := strings.Split(string(src), "\n")
		if len(lines) < 3 {
			t.Errorf("%s: no header comment", f)
			continue
		}
		h := header.FindStringSubmatch(lines[2])
		if h == nil {
			t.Errorf("%s: header line %q is not \"// Name (key N).\"", f, lines[2])
			continue
		}
		if h[2] != strconv.Itoa(n) || !strings.EqualFold(h[1], kmsg.NameForKey(key)) {
			t.Errorf("%s: header names %s key %s, want %s key %d", f, h[1], h[2], kmsg.NameForKey(key), key)
		}
		if versionRange.MatchString(lines[2]) {
			t.Errorf("%s: header line %q restates a version range", f, lines[2])
		}
	}
	for key := range registry {
		if !seen[key] {
			t.Errorf("key %d (%s) is registered outside an api_NN file", key, kmsg.NameForKey(key))
		}
	}
}

// ApiVersions advertises exactly the registered rows.
func TestApiVersionsFromRegistry(t *testing.T) {
	srv := server.New(testutil.Logger(t), (&Handlers{}).APIs(), defaultServerConfig(), server.NewMetrics())
	got := map[int16][2]int16{}
	for _, k := range srv.VersionRanges() {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	if len(got) != len(registry) {
		t.Errorf("%d ranges advertised, %d registered", len(got), len(registry))
	}
	for key, spec := range registry {
		if got[key] != [2]int16{spec.min, spec.max} {
			t.Errorf("%s: advertised %v, registered %d–%d", kmsg.NameForKey(key), got[key], spec.min, spec.max)
		}
	}
}
