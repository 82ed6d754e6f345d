package metadata

import (
	"context"
	"io"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// newRaftLogger returns the hclog.Logger handed to raft, its transport and
// its snapshot store: messages at warn and above go to log, the rest is
// dropped.
func newRaftLogger(log *slog.Logger) hclog.Logger {
	l := hclog.NewInterceptLogger(&hclog.LoggerOptions{
		Name:   "raft",
		Level:  hclog.Warn,
		Output: io.Discard,
	})
	l.RegisterSink(slogSink{log})
	return l
}

// slogSink forwards hclog messages to a slog.Logger.
type slogSink struct{ log *slog.Logger }

func (s slogSink) Accept(name string, level hclog.Level, msg string, args ...any) {
	if level < hclog.Warn || level == hclog.Off {
		return
	}
	l := slog.LevelWarn
	if level >= hclog.Error {
		l = slog.LevelError
	}
	s.log.Log(context.Background(), l, msg, append([]any{"logger", name}, args...)...)
}
