package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ModuleRoot is the directory of the go.mod the test runs in.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("not inside a Go module")
	}
	return filepath.Dir(gomod)
}

// BuildKbroker builds ./cmd/kbroker of this module into dir and returns
// the binary's path: tests that run the broker as a process.
func BuildKbroker(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "kbroker")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kbroker")
	build.Dir = ModuleRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kbroker: %v\n%s", err, out)
	}
	return bin
}
