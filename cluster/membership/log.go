package membership

import (
	"bytes"
	"context"
	"log/slog"
)

// slogWriter adapts memberlist's *log.Logger output ("[LEVEL] memberlist:
// message") to slog. [DEBUG] lines are dropped. A log.Logger calls Write
// once per line and serializes calls.
type slogWriter struct{ l *slog.Logger }

var levelPrefixes = []struct {
	prefix string
	level  slog.Level
	drop   bool
}{
	{"[DEBUG]", slog.LevelDebug, true},
	{"[INFO]", slog.LevelInfo, false},
	{"[WARN]", slog.LevelWarn, false},
	{"[ERR]", slog.LevelError, false},
	{"[ERROR]", slog.LevelError, false},
}

func (w slogWriter) Write(p []byte) (int, error) {
	n := len(p)
	line := bytes.TrimSpace(p)
	level := slog.LevelInfo
	for _, lp := range levelPrefixes {
		if bytes.HasPrefix(line, []byte(lp.prefix)) {
			if lp.drop {
				return n, nil
			}
			level = lp.level
			line = bytes.TrimSpace(line[len(lp.prefix):])
			break
		}
	}
	line = bytes.TrimPrefix(line, []byte("memberlist: "))
	w.l.Log(context.Background(), level, string(line))
	return n, nil
}
