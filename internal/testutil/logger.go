package testutil

import (
	"io"
	"log/slog"
	"os"
	"testing"
)

// Logger is the logger of a broker under test: discarded, unless the
// environment sets KB_TEST_LOG, when it is written to stderr at debug
// level.
func Logger(t testing.TB) *slog.Logger {
	if os.Getenv("KB_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
